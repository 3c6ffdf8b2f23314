/**
 * Anthropic messages through the gateway, streamed: text deltas go to the host as they arrive,
 * tool_use blocks are assembled from their input_json_delta parts, and the core loops on tool use
 * (sandbox tools in the runner, host actions over IPC) for at most `maxToolRounds` rounds.
 */
import { alternating, conversation } from "../context.js"
import type { SseEvent } from "../gateway-client.js"
import { CoreFailed, type CoreContext, type CoreRun, NO_PROVIDER_NOTICE, outcomeText } from "./types.js"

type Block =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "tool_use"; readonly id: string; readonly name: string; readonly input: unknown }

/** A block while it streams: tool input arrives as JSON text in parts. */
type Building = { type: "text"; text: string } | { type: "tool_use"; id: string; name: string; json: string; input: unknown } | { type: "other" }

const MAX_TOKENS = 4096

const parseInput = (json: string, given: unknown): unknown => {
  if (json.trim() === "") return given ?? {}
  try {
    return JSON.parse(json)
  } catch {
    throw new CoreFailed("llm_bad_answer", "a tool call's input is not JSON", true)
  }
}

const streamRound = async (ctx: CoreContext, body: Record<string, unknown>): Promise<ReadonlyArray<Block>> => {
  const blocks: Array<Building> = []
  let whole: ReadonlyArray<Block> | undefined
  let sawMessage = false
  await ctx.gateway!.stream("/v1/messages", body, (e: SseEvent) => {
    const data = JSON.parse(e.data) as Record<string, any>
    if (e.event === "json") {
      // An upstream that did not stream: the whole answer at once.
      if (!Array.isArray(data.content)) throw new CoreFailed("llm_bad_answer", "the answer has no content", true)
      whole = data.content as ReadonlyArray<Block>
      const text = whole.filter((b) => b.type === "text").map((b) => (b as { text: string }).text).join("")
      if (text !== "") ctx.delta(text)
      return
    }
    switch (data.type) {
      case "error":
        // The Messages dialect names only an error type (api_error, overloaded_error): past the
        // headers, every one of them means the stream was cut.
        throw new CoreFailed("stream_interrupted", "the LLM stream ended with an error", true)
      case "message_start":
        sawMessage = true
        return
      case "content_block_start": {
        // A real server (llama.cpp's llama-server) sometimes leaves out message_start: a content
        // block is a message too.
        sawMessage = true
        const b = data.content_block ?? {}
        blocks[data.index] = b.type === "text"
          ? { type: "text", text: typeof b.text === "string" ? b.text : "" }
          : b.type === "tool_use"
          ? { type: "tool_use", id: String(b.id ?? ""), name: String(b.name ?? ""), json: "", input: b.input }
          : { type: "other" }
        return
      }
      case "content_block_delta": {
        const b = blocks[data.index]
        const d = data.delta ?? {}
        if (b?.type === "text" && d.type === "text_delta" && typeof d.text === "string" && d.text !== "") {
          b.text += d.text
          ctx.delta(d.text)
        } else if (b?.type === "tool_use" && d.type === "input_json_delta" && typeof d.partial_json === "string") b.json += d.partial_json
        return
      }
      default:
        // message_delta (stop reason, usage), content_block_stop, message_stop, ping
        return
    }
  })
  if (whole !== undefined) return whole
  if (!sawMessage) throw new CoreFailed("llm_bad_answer", "the stream held no message", true)
  return blocks.flatMap((b): Array<Block> =>
    b === undefined || b.type === "other"
      ? []
      : b.type === "text"
      ? [{ type: "text", text: b.text }]
      : [{ type: "tool_use", id: b.id, name: b.name, input: parseInput(b.json, b.input) }]
  )
}

export const anthropic: CoreRun = async (ctx) => {
  if (ctx.gateway === null || ctx.turn.model === null) return ctx.reply(NO_PROVIDER_NOTICE)
  const messages: Array<Record<string, unknown>> = alternating(conversation(ctx.turn)).map((t) => ({ role: t.role, content: t.text }))
  const tools = ctx.tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.inputSchema }))
  for (let round = 0; ; round++) {
    const body: Record<string, unknown> = { model: ctx.turn.model, max_tokens: MAX_TOKENS, system: ctx.system, messages, stream: true }
    if (tools.length > 0 && round < ctx.turn.maxToolRounds) body.tools = tools
    const content = await streamRound(ctx, body)
    const uses = content.filter((b): b is Extract<Block, { type: "tool_use" }> => b.type === "tool_use")
    if (uses.length === 0 || round >= ctx.turn.maxToolRounds) {
      return ctx.reply(content.filter((b): b is Extract<Block, { type: "text" }> => b.type === "text").map((b) => b.text).join(""))
    }
    // Empty text blocks are refused when sent back.
    messages.push({ role: "assistant", content: content.filter((b) => b.type !== "text" || b.text !== "") })
    const results = []
    for (const use of uses) {
      const outcome = await ctx.callTool(use.name, use.input)
      results.push({ type: "tool_result", tool_use_id: use.id, content: outcomeText(outcome), ...(outcome.ok ? {} : { is_error: true }) })
    }
    messages.push({ role: "user", content: results })
  }
}
