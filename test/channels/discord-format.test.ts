/** Discord's pure parts: Markdown for Discord, message decoding, the cursor's positions, nonces. */
import { assert, describe, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { nonceOf } from "../../src/channels/discord/DiscordRuntime.js"
import { toDiscordMarkdown } from "../../src/channels/discord/markdown.js"
import { attachmentsOf, decodeMessageEvent, laterId, readPositions, writePositions } from "../../src/channels/discord/messages.js"

describe("toDiscordMarkdown", () => {
  it("Markdown Discord shares passes through unchanged", () => {
    const text = "# Title\n\n**bold**, *italic*, _also_, ~~gone~~, `code`, [link](https://example.com)\n\n- a\n- b\n\n> quoted\n\n```ts\nconst a = 1\n```"
    assert.strictEqual(toDiscordMarkdown(text), text)
  })

  it("__bold__ stays bold (Discord would underline it); snake_case and dunder names are left alone", () => {
    assert.strictEqual(toDiscordMarkdown("a __strong__ word"), "a **strong** word")
    assert.strictEqual(toDiscordMarkdown("call __init__ and my_var__x"), "call **init** and my_var__x")
    assert.strictEqual(toDiscordMarkdown("`__init__` stays"), "`__init__` stays")
  })

  it("spoiler bars and subtext markers are escaped; deep headings are shown bold", () => {
    assert.strictEqual(toDiscordMarkdown("a || b"), "a \\|\\| b")
    assert.strictEqual(toDiscordMarkdown("-# small"), "\\-# small")
    assert.strictEqual(toDiscordMarkdown("#### Deep heading ####"), "**Deep heading**")
    assert.strictEqual(toDiscordMarkdown("### kept"), "### kept")
  })

  it("code blocks are untouched, closed or not", () => {
    const code = "```\na || b\n__x__\n-# y\n```"
    assert.strictEqual(toDiscordMarkdown(code), code)
    assert.strictEqual(toDiscordMarkdown("~~~\n||open"), "~~~\n||open")
  })

  it.prop("text without Discord's own markers is unchanged", [fc.stringMatching(/^[a-zA-Z0-9 .,!?*\n`-]{0,200}$/)], ([s]) => {
    fc.pre(!/^\s*-#/m.test(s))
    assert.strictEqual(toDiscordMarkdown(s), s)
  })
})

describe("Discord messages", () => {
  const base = { id: "1100000000000000001", channel_id: "500", author: { id: "7", username: "ada" }, content: "hi" }

  it("a text message decodes; a DM has no guild id; a reply keeps its author", () => {
    const d = decodeMessageEvent({ ...base, referenced_message: { author: { id: "9" } }, type: 19 })
    assert.strictEqual(d._tag, "text")
    if (d._tag === "text") {
      assert.isUndefined(d.message.guild_id)
      assert.strictEqual(d.message.referenced_message?.author?.id, "9")
      assert.deepStrictEqual(d.message.mentions, [])
    }
  })

  it("malformed payloads, system messages and empty texts are skipped with a reason naming no content", () => {
    const reasons = [
      decodeMessageEvent({ ...base, id: 5 }),
      decodeMessageEvent(null),
      decodeMessageEvent({ ...base, type: 7 }),
      decodeMessageEvent({ ...base, content: "" }),
      decodeMessageEvent({ ...base, author: undefined })
    ].map((d) => (d._tag === "skip" ? d.reason : "decoded"))
    assert.deepStrictEqual(reasons, [
      "malformed message (no id)",
      "malformed message (no id)",
      "message 1100000000000000001: system message type 7",
      "message 1100000000000000001: neither text nor files (an embed, a sticker, or the message content intent is off)",
      "malformed message 1100000000000000001"
    ])
  })

  it("a message of files only decodes; each attachment decodes on its own, a malformed one counted, not fatal", () => {
    const file = { id: "1100000000000000002", filename: "a.png", content_type: "image/png", size: 3, url: "https://cdn.discordapp.com/attachments/500/1100000000000000002/a.png" }
    const d = decodeMessageEvent({ ...base, content: "", attachments: [file, { ...file, size: -1 }, { id: "x" }] })
    assert.strictEqual(d._tag, "text")
    if (d._tag === "text") {
      const { attachments, malformed } = attachmentsOf(d.message)
      assert.deepStrictEqual(attachments, [file])
      assert.strictEqual(malformed, 2)
    }
  })

  it("ids compare as snowflakes (numbers, not strings)", () => {
    assert.strictEqual(laterId("999", "1000"), "1000")
    assert.strictEqual(laterId("1000", "999"), "1000")
    assert.strictEqual(laterId(undefined, "5"), "5")
  })

  it("positions round-trip; anything else reads as none", () => {
    const p = { "500": "1100000000000000001", "501": "7" }
    assert.deepStrictEqual(readPositions(writePositions(p)), p)
    assert.isUndefined(readPositions("42"))
    assert.isUndefined(readPositions("{\"500\":\"x\"}"))
  })

  it.prop("a nonce fits Discord's 25 characters and differs by part key", [fc.string(), fc.string()], ([a, b]) => {
    assert.strictEqual(nonceOf(a).length, 25)
    if (a !== b) assert.notStrictEqual(nonceOf(a), nonceOf(b))
  })
})
