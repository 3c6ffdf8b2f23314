/**
 * The gateway's only way to turn untrusted text into something a log line, an event, an error or
 * a client response may carry: credential headers and key-like strings are masked, and so is
 * every configured provider key, wherever it appears. Text is masked by src/protocol/redact-text.ts.
 */
import { Effect } from "effect"
import { MIN_MASKED_KEY_CHARS, REDACTED, redactText } from "../protocol/redact-text.js"

export { MIN_MASKED_KEY_CHARS, REDACTED, redactText }


/** The configured keys worth masking: those of at least MIN_MASKED_KEY_CHARS characters. */
export const maskedKeys = (keys: ReadonlyArray<string>): ReadonlyArray<string> => keys.filter((k) => k.length >= MIN_MASKED_KEY_CHARS)

const secretHeaders = new Set(["authorization", "proxy-authorization", "x-api-key", "api-key", "cookie", "set-cookie", "x-goog-api-key"])

export const isSecretHeader = (name: string): boolean => secretHeaders.has(name.toLowerCase())

/** A copy of the headers with credential headers masked and other values redacted as text. */
export const redactHeaders = (
  headers: Record<string, string | ReadonlyArray<string> | number | undefined>,
  known: ReadonlyArray<string> = []
): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue
    out[name] = isSecretHeader(name) ? REDACTED : redactText(Array.isArray(value) ? value.join(", ") : String(value), known)
  }
  return out
}

/** Deep copy of a JSON-like value with every string redacted and secret-named fields masked. */
export const redactValue = (value: unknown, known: ReadonlyArray<string> = []): unknown => {
  if (typeof value === "string") return redactText(value, known)
  if (Array.isArray(value)) return value.map((v) => redactValue(v, known))
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value)) out[k] = isSecretHeader(k) || (/key|token|secret|password/i.test(k) && typeof v === "string") ? REDACTED : redactValue(v, known)
    return out
  }
  return value
}

/** Masks `known` secrets in a buffer in place, keeping its length (Content-Length stays right). */
export const maskChunk = (chunk: Buffer, known: ReadonlyArray<Buffer>): Buffer => {
  for (const secret of known) {
    let at = chunk.indexOf(secret)
    while (at !== -1) {
      chunk.fill(0x2a, at, at + secret.length)
      at = chunk.indexOf(secret, at + secret.length)
    }
  }
  return chunk
}

/**
 * Length of the longest suffix of `buf` that is a proper prefix of one of `known`: the bytes that
 * could be the start of a secret the next chunk completes. Scans at most the last
 * longest-secret-minus-one bytes, only from positions holding a secret's first byte.
 */
export const secretPrefixAtEnd = (buf: Buffer, known: ReadonlyArray<Buffer>): number => {
  const n = buf.length
  let held = 0
  for (const secret of known) {
    const first = secret[0]!
    let p = buf.indexOf(first, Math.max(0, n - secret.length + 1))
    // The first match is the longest candidate; a longer hold than `held` needs p < n - held.
    while (p !== -1 && n - p > held) {
      if (buf.compare(secret, 0, n - p, p, n) === 0) {
        held = n - p
        break
      }
      p = buf.indexOf(first, p + 1)
    }
  }
  return held
}

/**
 * Masks `known` secrets in a body passed through chunk by chunk, including a secret the upstream
 * splits across chunks: a chunk's tail that could be the start of a secret is held back (never
 * more than longest-secret-minus-one bytes) until the next chunk decides it. Only such a tail is
 * held, so a stream's events are not delayed (they end in newlines, which start no key). The
 * output has the input's length, so Content-Length stays right.
 */
export class StreamMasker {
  private tail: Buffer | undefined = undefined

  constructor(private readonly known: ReadonlyArray<Buffer>) {}

  /** What may go to the client now (possibly empty). Masks `chunk` in place. */
  push(chunk: Buffer): Buffer {
    const data = this.tail === undefined ? chunk : Buffer.concat([this.tail, chunk])
    maskChunk(data, this.known)
    const held = secretPrefixAtEnd(data, this.known)
    if (held === 0) {
      this.tail = undefined
      return data
    }
    this.tail = Buffer.from(data.subarray(data.length - held))
    return data.subarray(0, data.length - held)
  }

  /**
   * The held tail at the end of the body, masked: the body ended inside what may be the start of
   * a key, and even a key's first bytes are not the client's to see.
   */
  end(): Buffer | undefined {
    const tail = this.tail
    this.tail = undefined
    return tail?.fill(0x2a)
  }
}

/**
 * A buffered body cut to `max` bytes with `known` secrets masked, including a secret the cut
 * would leave half (its first bytes are masked too).
 */
export const maskTruncated = (body: Buffer, max: number, known: ReadonlyArray<Buffer>): Buffer => {
  const out = maskChunk(body, known).subarray(0, max)
  if (out.length === body.length) return out
  const held = secretPrefixAtEnd(out, known)
  return held === 0 ? out : out.fill(0x2a, out.length - held)
}

/** Every log line the gateway writes goes through here. */
export const gatewayLog = (
  level: "Debug" | "Info" | "Warning" | "Error",
  message: string,
  fields: Record<string, unknown> = {},
  known: ReadonlyArray<string> = []
): Effect.Effect<void> => {
  const line = redactText(message, known)
  const log = level === "Debug" ? Effect.logDebug(line)
    : level === "Info" ? Effect.logInfo(line)
    : level === "Warning" ? Effect.logWarning(line)
    : Effect.logError(line)
  return Effect.annotateLogs(log, redactValue(fields, known) as Record<string, unknown>)
}
