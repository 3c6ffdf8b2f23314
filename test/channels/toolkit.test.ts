/** The shared channel toolkit: long replies cut into parts, group-chat triggers, MarkdownV2. */
import { assert, describe, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { splitText } from "../../src/channels/split.js"
import { escapeText, toMarkdownV2 } from "../../src/channels/telegram/markdown-v2.js"
import { isTriggered, routeOf } from "../../src/channels/triggers.js"

const words = fc.array(fc.stringMatching(/^[a-z]{1,12}$/), { minLength: 1, maxLength: 40 }).map((ws) => ws.join(" "))
const paragraphs = fc.array(words, { minLength: 1, maxLength: 30 })

describe("splitText", () => {
  it.prop("every part fits the limit and the parts hold the text, in order", [paragraphs, fc.integer({ min: 20, max: 500 })], ([ps, limit]) => {
    const text = ps.join("\n\n")
    const parts = splitText(text, limit)
    for (const p of parts) assert.isAtMost(p.length, limit)
    assert.strictEqual(parts.join(" ").replace(/\s+/g, " "), text.replace(/\s+/g, " "))
  })

  it("cuts between paragraphs before cutting inside one", () => {
    const a = "a".repeat(30)
    const b = "b".repeat(30)
    assert.deepStrictEqual(splitText(`${a}\n\n${b}`, 40), [a, b])
    assert.deepStrictEqual(splitText(`${a}\n\n${b}`, 100), [`${a}\n\n${b}`])
  })

  it("a code block longer than the limit is cut at line ends and each piece fenced again", () => {
    const code = "```py\n" + Array.from({ length: 30 }, (_, i) => `print(${i})`).join("\n") + "\n```"
    const parts = splitText(`intro\n\n${code}\n\nend`, 120)
    for (const p of parts) {
      assert.isAtMost(p.length, 120)
      assert.strictEqual((p.match(/```/g) ?? []).length % 2, 0, p)
    }
    assert.isTrue(parts.filter((p) => p.includes("print(")).every((p) => p.includes("```py\n")))
    const lines = parts.join("\n").split("\n").filter((l) => l.startsWith("print("))
    assert.strictEqual(lines.length, 30)
  })

  it("a word longer than the limit is cut inside it", () => {
    assert.deepStrictEqual(splitText("x".repeat(25), 10), ["x".repeat(10), "x".repeat(10), "x".repeat(5)])
  })
})

describe("group triggers", () => {
  const base = { direct: false, trigger: "@pynchy", handle: "@pynchy_bot", repliesToBot: false }
  it("direct messages always; in groups the trigger as a word (any case), the bot's handle, or a reply to the bot", () => {
    assert.isTrue(isTriggered({ ...base, direct: true, text: "hello" }))
    assert.isFalse(isTriggered({ ...base, text: "hello all" }))
    assert.isTrue(isTriggered({ ...base, text: "hey @PYNCHY, what now" }))
    assert.isFalse(isTriggered({ ...base, text: "ask @pynchyfan" }))
    assert.isTrue(isTriggered({ ...base, text: "@pynchy_bot help" }))
    assert.isTrue(isTriggered({ ...base, text: "yes", repliesToBot: true }))
    assert.isTrue(isTriggered({ ...base, trigger: undefined, handle: undefined, text: "anything" }))
  })
  it("a place's own route wins over *", () => {
    const routes = [{ place: "*", trigger: "a" }, { place: "-1", trigger: "b" }]
    assert.strictEqual(routeOf(routes, "-1")?.trigger, "b")
    assert.strictEqual(routeOf(routes, "-2")?.trigger, "a")
  })
})

describe("MarkdownV2", () => {
  it("escapes every reserved character of plain text", () => {
    assert.strictEqual(escapeText("a_b*c[d](e)~f`g>h#i+j-k=l|m{n}o.p!q\\"), "a\\_b\\*c\\[d\\]\\(e\\)\\~f\\`g\\>h\\#i\\+j\\-k\\=l\\|m\\{n\\}o\\.p\\!q\\\\")
  })
  it("keeps code, bold, italic, links and headings; escapes the rest", () => {
    assert.strictEqual(toMarkdownV2("**Done.** See `a_b` and [docs](https://x.org/a_b?q=1)"), "*Done\\.* See `a_b` and [docs](https://x.org/a_b?q=1)")
    assert.strictEqual(toMarkdownV2("# Title!\n_it_ 1+1=2"), "*Title\\!*\n_it_ 1\\+1\\=2")
    assert.strictEqual(toMarkdownV2("```js\nconst a = `x` \\ 1\n```"), "```js\nconst a = \\`x\\` \\\\ 1\n```")
  })
  it.prop("text without Markdown comes back unchanged once the escapes are removed", [fc.string({ maxLength: 200 })], ([s]) => {
    const plain = s.replace(/[*_`~[\]#]/g, "")
    assert.strictEqual(toMarkdownV2(plain).replace(/\\([\s\S])/g, "$1"), plain)
  })
})
