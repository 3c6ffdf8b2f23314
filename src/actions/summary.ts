/**
 * What an approval notice may say about an action's input: a bounded, redacted one-line summary.
 * The input is the agent's, so it is treated as hostile: secret-named fields are masked whatever
 * their value, key-like strings are masked, control and bidi characters are escaped (no forged
 * lines, no reordered text), backticks cannot close the notice's code span, and the result is
 * cut to `max` characters. Masking runs on whole strings before the cut, so a key cut short
 * cannot slip past the key-like patterns.
 */
import { REDACTED, redactText } from "../gateway/redact.js"

export const SUMMARY_MAX = 200

const SECRET_NAME = /key|token|secret|passw|credential|auth(?!or)|cookie|session|private|signature/i
// C0/C1 controls, zero-width and bidi controls, line/paragraph separators, BOM.
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g
const MAX_DEPTH = 8
const MAX_ENTRIES = 50

const masked = (value: unknown, depth: number): unknown => {
  if (typeof value === "string") return redactText(value)
  if (value === null || typeof value !== "object") return typeof value === "bigint" ? String(value) : value
  if (depth >= MAX_DEPTH) return "…"
  if (Array.isArray(value)) return value.slice(0, MAX_ENTRIES).map((v) => masked(v, depth + 1))
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(value).slice(0, MAX_ENTRIES)) {
    out[redactText(k)] = SECRET_NAME.test(k) ? REDACTED : masked(v, depth + 1)
  }
  return out
}

/** One line, at most `max` characters, with no secret-named value and no key-like string of `input`. */
export const inputSummary = (input: unknown, max = SUMMARY_MAX): string => {
  let json: string
  try {
    json = JSON.stringify(masked(input, 0)) ?? "null"
  } catch {
    json = "(not JSON)"
  }
  const line = json
    .replace(UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)
    .replace(/`/g, "'")
  return line.length <= max ? line : `${line.slice(0, max - 1)}…`
}
