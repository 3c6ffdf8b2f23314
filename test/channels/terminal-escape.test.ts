/**
 * The one escaping function for text printed on a terminal: control characters (C0, DEL, C1,
 * line separators, bidi overrides) are shown, not obeyed; newlines and tabs stay in chat text;
 * escaping is per character (a sequence split in pieces is as inert) and idempotent.
 */
import { assert, describe, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { escapeControls, terminalText } from "../../src/channels/terminal/escape.js"

const ACTING = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/

describe("terminal text escaping", () => {
  it("shows ANSI, OSC, C1 and cursor controls as text; keeps lines and tabs", () => {
    assert.strictEqual(terminalText("a\x1b[31mred\x1b[0m"), "a\\u001b[31mred\\u001b[0m")
    assert.strictEqual(terminalText("\x1b]2;title\x07"), "\\u001b]2;title\\u0007")
    assert.strictEqual(terminalText("\x9b2J\x9d0;t\x9c"), "\\u009b2J\\u009d0;t\\u009c")
    assert.strictEqual(terminalText("over\rwrite\b\x7f"), "over\\rwrite\\u0008\\u007f")
    assert.strictEqual(terminalText("line 1\r\nline 2\n\tindented"), "line 1\nline 2\n\tindented")
    assert.strictEqual(terminalText("abc\u202edef\u2028"), "abc\\u202edef\\u2028")
    assert.strictEqual(terminalText("plain text, ünïcode ✓ 日本"), "plain text, ünïcode ✓ 日本")
    assert.strictEqual(escapeControls("a\nb\tc"), "a\\nb\\tc")
  })

  it.prop("nothing that acts survives; escaping twice changes nothing; pieces escape as the whole does", [fc.array(fc.oneof(fc.string(), fc.constantFrom("\x1b", "\x9b", "\r", "\u202e", "\x07", "\n", "\t")))], ([pieces]) => {
    const whole = pieces.join("")
    const once = terminalText(whole)
    assert.notMatch(once, ACTING)
    assert.notMatch(escapeControls(whole), /[\n\t]/)
    assert.strictEqual(terminalText(once), once)
    // A CRLF split across two pieces is a CR then a line end: the joined text may differ only there.
    if (!whole.includes("\r\n")) assert.strictEqual(pieces.map(terminalText).join(""), once)
  })
})
