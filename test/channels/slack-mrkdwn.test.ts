/** The Markdown → mrkdwn conversion and Slack's text back to plain text, and the event decoding (pure). */
import { assert, describe, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { decodeCallback, isDirect, placeOf, targetOf } from "../../src/channels/slack/events.js"
import { escapeText, fromSlackText, toMrkdwn } from "../../src/channels/slack/mrkdwn.js"

describe("toMrkdwn", () => {
  it("converts bold, italic, strikethrough, links, headings and bullets", () => {
    assert.strictEqual(toMrkdwn("**bold** and *it* and _it_ and ~~gone~~"), "*bold* and _it_ and _it_ and ~gone~")
    assert.strictEqual(toMrkdwn("see [the docs](https://example.com/a?b=1&c=2)"), "see <https://example.com/a?b=1&c=2|the docs>")
    assert.strictEqual(toMrkdwn("# Title\ntext"), "*Title*\ntext")
    assert.strictEqual(toMrkdwn("- one\n* two\n  + nested"), "• one\n• two\n  • nested")
  })

  it("escapes &, < and > everywhere, code included, and keeps code's content otherwise", () => {
    assert.strictEqual(toMrkdwn("a < b && c > d"), "a &lt; b &amp;&amp; c &gt; d")
    assert.strictEqual(toMrkdwn("`x <y> **z**`"), "`x &lt;y&gt; **z**`")
    assert.strictEqual(toMrkdwn("```ts\nif (a < b) { **no** }\n```"), "```\nif (a &lt; b) { **no** }\n```")
    assert.strictEqual(toMrkdwn("<!channel> wake up"), "&lt;!channel&gt; wake up")
  })

  it("keeps user and channel mentions written the Slack way", () => {
    assert.strictEqual(toMrkdwn("thanks <@U123ABC>, see <#C042|general>"), "thanks <@U123ABC>, see <#C042|general>")
  })

  it("a label cannot break out of its link", () => {
    assert.strictEqual(toMrkdwn("[a|b](https://x.test/p)"), "<https://x.test/p|a/b>")
  })

  it.prop("plain text without markup comes back from Slack as written", [fc.string().filter((s) => !/[*_~`[\]#\-+]/.test(s) && !/^\s*\d/.test(s))], ([s]) => {
    assert.strictEqual(fromSlackText(toMrkdwn(s)), s)
  })

  it.prop("the output never holds a raw & < > outside a mention or link it made", [fc.string()], ([s]) => {
    const out = toMrkdwn(s).replace(/<(@[UW][A-Z0-9]+|#C[A-Z0-9]+(\|[\w.-]*)?|(https?|mailto):[^|>]+\|[^>]*)>/g, "")
    assert.notMatch(out, /[<>]|&(?!amp;|lt;|gt;)/)
  })
})

describe("fromSlackText", () => {
  it("decodes entities once and shows links as label and address", () => {
    assert.strictEqual(fromSlackText("a &lt; b &amp;&amp; c &amp;lt; d"), "a < b && c &lt; d")
    assert.strictEqual(fromSlackText("see <https://x.test/a|the page> or <https://y.test>"), "see the page (https://x.test/a) or https://y.test")
    assert.strictEqual(fromSlackText("<@U1> hi"), "<@U1> hi")
  })
  it("escapeText is its inverse on plain text", () => {
    assert.strictEqual(fromSlackText(escapeText("<&>")), "<&>")
  })
})

describe("Slack event decoding", () => {
  const callback = (event: Record<string, unknown>) => ({ type: "event_callback", event_id: "Ev1", event })
  const message = { type: "message", channel: "C1", channel_type: "channel", user: "U1", text: "hi", ts: "1.000001" }

  it("takes a user's message with text or files; skips other types, subtypes, bots and malformed messages with a reason", () => {
    assert.strictEqual(decodeCallback(callback(message))._tag, "message")
    assert.deepStrictEqual(decodeCallback(callback({ type: "app_mention", user: "U1" })), { _tag: "skip", eventId: "Ev1", reason: "event type app_mention" })
    assert.deepStrictEqual(decodeCallback(callback({ ...message, subtype: "message_changed" })), { _tag: "skip", eventId: "Ev1", reason: "message subtype message_changed" })
    assert.deepStrictEqual(decodeCallback(callback({ ...message, bot_id: "B1" })), { _tag: "skip", eventId: "Ev1", reason: "a bot's message" })
    assert.deepStrictEqual(decodeCallback(callback({ ...message, text: 1 })), { _tag: "skip", eventId: "Ev1", reason: "malformed message" })
    assert.deepStrictEqual(decodeCallback(callback({ ...message, text: "  " })), { _tag: "skip", eventId: "Ev1", reason: "a message with neither text nor files" })
    // A file shared with or without a comment is a message; without files or text it is not.
    const { text: _, ...bare } = message
    assert.strictEqual(decodeCallback(callback({ ...bare, subtype: "file_share", files: [{ id: "F1" }] }))._tag, "message")
    assert.deepStrictEqual(decodeCallback(callback({ ...message, text: "", subtype: "file_share", files: [] })), { _tag: "skip", eventId: "Ev1", reason: "a message with neither text nor files" })
    assert.deepStrictEqual(decodeCallback({ type: "url_verification" }), { _tag: "malformed" })
    assert.deepStrictEqual(decodeCallback(null), { _tag: "malformed" })
  })

  it("a thread reply is the place <channel>/<thread_ts>; a thread's parent is the channel; targetOf inverts it", () => {
    assert.strictEqual(placeOf({ ...message, type: "message" }), "C1")
    assert.strictEqual(placeOf({ ...message, type: "message", thread_ts: "1.000001" }), "C1")
    assert.strictEqual(placeOf({ ...message, type: "message", ts: "2.0", thread_ts: "1.000001" }), "C1/1.000001")
    assert.deepStrictEqual(targetOf("C1/1.000001"), { channel: "C1", threadTs: "1.000001" })
    assert.deepStrictEqual(targetOf("D9"), { channel: "D9", threadTs: undefined })
  })

  it("a DM is direct; a channel is not", () => {
    assert.isTrue(isDirect({ ...message, type: "message", channel: "D1", channel_type: "im" }))
    assert.isFalse(isDirect({ ...message, type: "message" }))
    assert.isFalse(isDirect({ ...message, type: "message", channel: "G1", channel_type: "mpim" }))
  })
})
