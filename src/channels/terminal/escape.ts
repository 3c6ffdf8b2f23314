/**
 * Text from a model, a channel or another user, made safe to print on a terminal: every control
 * character is shown as its escape (`\u001b`, `\r`) instead of acting. That covers C0 (ESC starts
 * every ANSI/CSI/OSC sequence, CR and BS move the cursor), DEL, C1 (U+0080..U+009F, where U+009B
 * is CSI and U+009D OSC on their own), the Unicode line and paragraph separators, and the bidi
 * overrides that reorder what is shown. Characters are escaped one by one, not sequences matched,
 * so a sequence split across streamed pieces is as inert as a whole one, and escaping twice
 * changes nothing.
 */
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g

const NAMED: Record<string, string> = { "\n": "\\n", "\r": "\\r", "\t": "\\t" }

const escapeOf = (c: string) => NAMED[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`

/** Escapes every control character but those in `keep` (e.g. "\n\t" for text shown as lines). */
export const escapeControls = (text: string, keep = ""): string =>
  text.replace(CONTROL, (c) => (keep.includes(c) ? c : escapeOf(c)))

/** For the chat and stdout: lines and tabs stay (a CRLF is a line end), everything else is escaped. */
export const terminalText = (text: string): string => escapeControls(text.replace(/\r\n/g, "\n"), "\n\t")
