/**
 * Token usage read from upstream answers: a JSON body, or the SSE events of a stream (OpenAI's
 * final `usage` chunk with include_usage, Anthropic's message_start/message_delta, the Responses
 * API's response.completed). Only lines mentioning "usage" are parsed.
 */
import { StringDecoder } from "node:string_decoder"

export interface Usage {
  readonly inputTokens: number
  readonly outputTokens: number
  readonly cacheReadTokens: number
  readonly cacheWriteTokens: number
  /** What budgets count: everything the upstream billed. */
  readonly totalTokens: number
}

interface Acc {
  input: number
  output: number
  cacheRead: number
  cacheWrite: number
  /** OpenAI's prompt_tokens already include cached tokens; Anthropic's input_tokens do not. */
  cacheIncluded: boolean
  seen: boolean
}

const num = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) && v > 0 ? v : 0)

const usageObject = (value: unknown): Record<string, unknown> | undefined => {
  if (value === null || typeof value !== "object") return undefined
  const o = value as Record<string, unknown>
  for (const candidate of [o.usage, (o.message as Record<string, unknown> | undefined)?.usage, (o.response as Record<string, unknown> | undefined)?.usage]) {
    if (candidate !== null && typeof candidate === "object") return candidate as Record<string, unknown>
  }
  return undefined
}

const merge = (acc: Acc, u: Record<string, unknown>) => {
  acc.seen = true
  if ("prompt_tokens" in u || "completion_tokens" in u) {
    acc.cacheIncluded = true
    acc.input = Math.max(acc.input, num(u.prompt_tokens))
    acc.output = Math.max(acc.output, num(u.completion_tokens))
    acc.cacheRead = Math.max(acc.cacheRead, num((u.prompt_tokens_details as Record<string, unknown> | undefined)?.cached_tokens))
    return
  }
  // Responses API and Anthropic: input/output_tokens; the Responses API reports cached as a subset.
  const details = u.input_tokens_details as Record<string, unknown> | undefined
  if (details !== undefined) acc.cacheIncluded = true
  acc.input = Math.max(acc.input, num(u.input_tokens))
  acc.output = Math.max(acc.output, num(u.output_tokens))
  acc.cacheRead = Math.max(acc.cacheRead, num(u.cache_read_input_tokens), num(details?.cached_tokens))
  acc.cacheWrite = Math.max(acc.cacheWrite, num(u.cache_creation_input_tokens))
}

const finish = (acc: Acc): Usage | null =>
  acc.seen
    ? {
      inputTokens: acc.input,
      outputTokens: acc.output,
      cacheReadTokens: acc.cacheRead,
      cacheWriteTokens: acc.cacheWrite,
      totalTokens: acc.input + acc.output + (acc.cacheIncluded ? 0 : acc.cacheRead + acc.cacheWrite)
    }
    : null

const fresh = (): Acc => ({ input: 0, output: 0, cacheRead: 0, cacheWrite: 0, cacheIncluded: false, seen: false })

/** Usage of a complete JSON answer, or null when it has none (or is not JSON). */
export const usageOfJson = (body: string): Usage | null => {
  try {
    const u = usageObject(JSON.parse(body))
    if (!u) return null
    const acc = fresh()
    merge(acc, u)
    return finish(acc)
  } catch {
    return null
  }
}

const MAX_PENDING = 1024 * 1024

/** Follows an SSE body chunk by chunk; never holds more than one partial line. */
export class SseUsageTap {
  private readonly decoder = new StringDecoder("utf8")
  private pending = ""
  private readonly acc = fresh()

  push(chunk: Buffer): void {
    const text = this.pending + this.decoder.write(chunk)
    const end = text.lastIndexOf("\n")
    if (end === -1) {
      this.pending = text.length > MAX_PENDING ? "" : text
      return
    }
    this.pending = text.slice(end + 1)
    if (this.pending.length > MAX_PENDING) this.pending = ""
    if (!text.includes("\"usage\"")) return
    for (const line of text.slice(0, end).split("\n")) {
      if (!line.startsWith("data:")) continue
      const at = line.indexOf("\"usage\"")
      // OpenAI repeats `"usage":null` on every chunk; only the last one carries numbers.
      if (at === -1 || line.startsWith("\"usage\":null", at) && line.indexOf("\"usage\"", at + 1) === -1) continue
      try {
        const u = usageObject(JSON.parse(line.slice(5)))
        if (u) merge(this.acc, u)
      } catch {
        // not JSON (e.g. [DONE]): nothing to count
      }
    }
  }

  result(): Usage | null {
    if (this.pending !== "") this.push(Buffer.from("\n"))
    return finish(this.acc)
  }
}
