/**
 * The gateway's only way to turn untrusted text into something a log line, an event, an error or
 * a client response may carry: credential headers and key-like strings are masked, and so is
 * every configured provider key, wherever it appears.
 */
import { Effect } from "effect"

export const REDACTED = "[redacted]"

const secretHeaders = new Set(["authorization", "proxy-authorization", "x-api-key", "api-key", "cookie", "set-cookie", "x-goog-api-key"])

/** Key-like: provider key prefixes, bearer values, our own tokens, and any long opaque run. */
const keyLike = [
  /\b(?:sk|pk|rk)-[A-Za-z0-9_-]{6,}/g,
  /\bsk_[A-Za-z0-9_-]{6,}/g,
  /\bpgw_[A-Za-z0-9_-]+/g,
  /\b(Bearer|Basic)\s+[^\s"',;]+/gi,
  /\b(?:AKIA|ghp_|gho_|xox[abpr]-|AIza)[A-Za-z0-9_-]{8,}/g,
  /[A-Za-z0-9_+/=-]{40,}/g
]

export const isSecretHeader = (name: string): boolean => secretHeaders.has(name.toLowerCase())

/** Masks key-like strings (and `known` secrets verbatim) in free text. */
export const redactText = (text: string, known: ReadonlyArray<string> = []): string => {
  let out = text
  for (const secret of known) if (secret.length > 0 && out.includes(secret)) out = out.split(secret).join(REDACTED)
  for (const re of keyLike) {
    out = out.replace(re, (_m, scheme?: string) =>
      typeof scheme === "string" && /^(bearer|basic)$/i.test(scheme) ? `${scheme} ${REDACTED}` : REDACTED
    )
  }
  return out
}

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

/**
 * Masks `known` secrets in a body chunk in place, keeping its length (Content-Length stays
 * right). A secret split across two chunks is not seen: bodies are never held back to look.
 */
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
