/**
 * The one way to turn untrusted text into something a log line, an event, an error or a client
 * response may carry: key-like strings are masked, and so is every `known` secret, wherever it
 * appears. A leaf (no imports), so the runner bundles it too (an MCP server's stderr) and the
 * gateway builds its header and body masking on it (src/gateway/redact.ts).
 */

export const REDACTED = "[redacted]"

/** Key-like: provider key prefixes, bearer values, our own tokens, and any long opaque run. */
const keyLike = [
  /\b(?:sk|pk|rk)-[A-Za-z0-9_-]{6,}/g,
  /\bsk_[A-Za-z0-9_-]{6,}/g,
  /\bpgw_[A-Za-z0-9_-]+/g,
  /\b(Bearer|Basic)\s+[^\s"',;]+/gi,
  /\b(?:AKIA|ghp_|gho_|xox[abpr]-|AIza)[A-Za-z0-9_-]{8,}/g,
  /[A-Za-z0-9_+/=-]{40,}/g
]

/**
 * The shortest known secret that is masked. A shorter one (`k`, `none`: dummy keys for local
 * servers are common) is found inside ordinary words, so masking it would corrupt replies ("ok"
 * became "o*") while hiding nothing worth a secret.
 */
export const MIN_MASKED_KEY_CHARS = 8

/** Masks key-like strings (and `known` secrets of MIN_MASKED_KEY_CHARS or more, verbatim) in free text. */
export const redactText = (text: string, known: ReadonlyArray<string> = []): string => {
  let out = text
  for (const secret of known) if (secret.length >= MIN_MASKED_KEY_CHARS && out.includes(secret)) out = out.split(secret).join(REDACTED)
  for (const re of keyLike) {
    out = out.replace(re, (_m, scheme?: string) =>
      typeof scheme === "string" && /^(bearer|basic)$/i.test(scheme) ? `${scheme} ${REDACTED}` : REDACTED
    )
  }
  return out
}
