/**
 * The reservation's input estimate (src/gateway/estimate.ts): text by size, images at a fixed
 * cost in each API's dialect, inline image data not counted as text, tool use at its prompt.
 */
import { assert, describe, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { GatewayBudgets } from "../../src/config/gateway.js"
import { inputEstimate, inputParts, LOW_DETAIL_IMAGE_TOKENS, reservationOf, TOOL_FRAMING_TOKENS, TOOL_PROMPT_TOKENS } from "../../src/gateway/estimate.js"

const config = GatewayBudgets.make({})
const bytesOf = (body: object) => Buffer.byteLength(JSON.stringify(body))
const estimate = (body: Record<string, unknown>, c = config) => inputEstimate(body, bytesOf(body), c)
const text = (body: object) => Math.ceil(bytesOf(body) / config.inputBytesPerToken)
const dataUrl = (kb: number) => `data:image/png;base64,${"A".repeat(kb * 1024)}`

const chatWith = (...content: Array<unknown>) => ({ model: "m", messages: [{ role: "user", content }] })

describe("the input estimate", () => {
  it("plain text is one token per inputBytesPerToken bytes; the reservation adds the cap or the default", () => {
    const body = { model: "m", messages: [{ role: "user", content: "hello there" }] }
    assert.strictEqual(estimate(body), text(body))
    assert.strictEqual(reservationOf(body, bytesOf(body), config), config.defaultMaxTokens + text(body))
    assert.strictEqual(reservationOf({ ...body, max_tokens: 10, n: 3 }, bytesOf(body), config), 30 + text(body))
  })

  it("chat images: imageTokens each, 85 with detail low, the URL form or the bare string", () => {
    const body = chatWith(
      { type: "text", text: "compare" },
      { type: "image_url", image_url: { url: "https://example.com/a.png" } },
      { type: "image_url", image_url: { url: "https://example.com/b.png", detail: "high" } },
      { type: "image_url", image_url: { url: "https://example.com/c.png", detail: "low" } },
      { type: "image_url", image_url: "https://example.com/d.png" }
    )
    assert.deepStrictEqual(inputParts(body), { images: 3, lowDetailImages: 1, imageDataBytes: 0, tools: 0 })
    assert.strictEqual(estimate(body), text(body) + 3 * config.imageTokens + LOW_DETAIL_IMAGE_TOKENS)
    assert.strictEqual(estimate(body, GatewayBudgets.make({ imageTokens: 5_000 })), text(body) + 3 * 5_000 + LOW_DETAIL_IMAGE_TOKENS)
  })

  it("inline image data counts as the image, not as text: 400 KB of base64 is one image", () => {
    const url = dataUrl(400)
    const body = chatWith({ type: "text", text: "what is this" }, { type: "image_url", image_url: { url } })
    const est = estimate(body)
    assert.strictEqual(est, Math.ceil((bytesOf(body) - url.length) / config.inputBytesPerToken) + config.imageTokens)
    assert.isBelow(est, 2_000)
  })

  it("Responses images: input_image parts in messages, by file, low detail, and inside a function call's output", () => {
    const body = {
      model: "m",
      input: [
        { role: "user", content: [{ type: "input_text", text: "look" }, { type: "input_image", image_url: dataUrl(10) }, { type: "input_image", file_id: "file-1", detail: "low" }] },
        { type: "function_call_output", call_id: "c1", output: [{ type: "input_image", image_url: "https://example.com/x.png" }] },
        { type: "input_image", image_url: "https://example.com/y.png", detail: "auto" }
      ]
    }
    const parts = inputParts(body)
    assert.deepStrictEqual(parts, { images: 3, lowDetailImages: 1, imageDataBytes: dataUrl(10).length, tools: 0 })
    assert.strictEqual(estimate(body), Math.ceil((bytesOf(body) - parts.imageDataBytes) / 4) + 3 * config.imageTokens + LOW_DETAIL_IMAGE_TOKENS)
    // A plain string input has no parts.
    assert.deepStrictEqual(inputParts({ model: "m", input: "hi" }), { images: 0, lowDetailImages: 0, imageDataBytes: 0, tools: 0 })
  })

  it("Anthropic image blocks: base64 (its data not counted as text), by URL, and inside a tool result", () => {
    const data = "B".repeat(30_000)
    const body = {
      model: "m",
      max_tokens: 100,
      messages: [
        { role: "user", content: [{ type: "image", source: { type: "base64", media_type: "image/png", data } }, { type: "text", text: "and" }, { type: "image", source: { type: "url", url: "https://example.com/z.png" } }] },
        { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "shot", input: {} }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: [{ type: "image", source: { type: "base64", media_type: "image/png", data } }] }] }
      ]
    }
    assert.deepStrictEqual(inputParts(body), { images: 3, lowDetailImages: 0, imageDataBytes: 60_000, tools: 0 })
    assert.strictEqual(reservationOf(body, bytesOf(body), config), 100 + Math.ceil((bytesOf(body) - 60_000) / 4) + 3 * config.imageTokens)
  })

  it("tools: the schemas by their bytes, plus the tool prompt once and each tool's framing, in all three dialects", () => {
    const schema = { type: "object", properties: { q: { type: "string", description: "what to look up" } }, required: ["q"] }
    const chat = { model: "m", messages: [{ role: "user", content: "hi" }], tools: [{ type: "function", function: { name: "a", parameters: schema } }, { type: "function", function: { name: "b", parameters: schema } }] }
    const responses = { model: "m", input: "hi", tools: [{ type: "function", name: "a", parameters: schema }] }
    const anthropic = { model: "m", max_tokens: 5, messages: [{ role: "user", content: "hi" }], tools: [{ name: "a", input_schema: schema }, { name: "b", input_schema: schema }, { name: "c", input_schema: schema }] }
    assert.strictEqual(estimate(chat), text(chat) + TOOL_PROMPT_TOKENS + 2 * TOOL_FRAMING_TOKENS)
    assert.strictEqual(estimate(responses), text(responses) + TOOL_PROMPT_TOKENS + TOOL_FRAMING_TOKENS)
    assert.strictEqual(estimate(anthropic), text(anthropic) + TOOL_PROMPT_TOKENS + 3 * TOOL_FRAMING_TOKENS)
    assert.strictEqual(estimate({ ...chat, tools: [] }), text({ ...chat, tools: [] }))
  })

  it("odd shapes are counted as text and never throw: nulls, wrong types, a deeply nested body", () => {
    let deep: unknown = { type: "image_url", image_url: { url: "https://example.com/deep.png" } }
    for (let i = 0; i < 100_000; i++) deep = { type: "tool_result", content: [deep] }
    const odd = { model: "m", messages: [null, 1, "x", { content: null }, { content: [null, 2, { type: "image_url" }, { type: "image", source: null }] }, { content: [deep] }], input: { not: "a list" }, tools: "none" }
    assert.deepStrictEqual(inputParts(odd as unknown as Record<string, unknown>), { images: 2, lowDetailImages: 0, imageDataBytes: 0, tools: 0 })
  })

  it.prop("an image part never lowers the estimate below the text of the rest", [fc.array(fc.constantFrom("url", "low", "data", "anthropic", "responses"), { maxLength: 20 }), fc.string({ maxLength: 200 })], ([kinds, words]) => {
    const part = (k: string) =>
      k === "url" ? { type: "image_url", image_url: { url: "https://example.com/i.png" } }
        : k === "low" ? { type: "image_url", image_url: { url: "https://example.com/i.png", detail: "low" } }
        : k === "data" ? { type: "image_url", image_url: { url: dataUrl(1) } }
        : k === "anthropic" ? { type: "image", source: { type: "base64", data: "C".repeat(999) } }
        : { type: "input_image", image_url: "https://example.com/i.png" }
    const plain = chatWith({ type: "text", text: words })
    const withImages = chatWith({ type: "text", text: words }, ...kinds.map(part))
    const low = kinds.filter((k) => k === "low").length
    assert.isAtLeast(estimate(withImages), text(plain) + (kinds.length - low) * config.imageTokens + low * LOW_DETAIL_IMAGE_TOKENS)
  })
})
