/**
 * Ingest decodes a payload with a type guard first and decodes it fully only to name what is
 * wrong (src/domain/message.ts). The guard must accept exactly what the full decode accepts,
 * and give the same value: checked here over valid payloads made from the schema, the same
 * payloads broken one property at a time, and arbitrary values.
 */
import { assert, describe, it } from "@effect/vitest"
import { Arbitrary, Either, FastCheck as fc, Schema } from "effect"
import { conversationIdOf, conversationIdOfChecked } from "../../src/domain/ids.js"
import { decodeInboundMessage, InboundMessageInput, MAX_TEXT_CHARS } from "../../src/domain/message.js"
import { problemsOf } from "../../src/domain/problems.js"

// The class's own fields (metadata defaults to an empty record): what `new InboundMessageInput` accepts.
const Fields = Schema.Struct(InboundMessageInput.fields)
const full = Schema.decodeUnknownEither(Fields)
// The hot path leaves an absent metadata absent; Ingest reads it as empty.
const withMetadata = <A extends { readonly metadata?: unknown }>(a: A) => ({ ...a, metadata: a.metadata ?? {} })
const decodeFully = (u: unknown) => full(u, { errors: "all", onExcessProperty: "error" })

// Valid payloads: the encoded side of the schema (so `metadata` may be absent).
const valid = Arbitrary.make(Schema.encodedBoundSchema(Fields))

// One property replaced by something of another kind, or an unknown property added.
const broken = fc.tuple(valid, fc.constantFrom("connection", "place", "providerEventId", "sender", "text", "metadata", "fingerprint", "files", "cursor", "extra"), fc.anything()).map(
  ([payload, key, value]) => ({ ...payload, [key]: value })
)

const agree = (u: unknown) => {
  const fast = decodeInboundMessage(u)
  const slow = decodeFully(u)
  assert.strictEqual(Either.isRight(fast), Either.isRight(slow), `guard and decode disagree on ${JSON.stringify(u, (_, v) => (v instanceof Uint8Array ? `<${v.length} bytes>` : v))}`)
  if (Either.isRight(fast) && Either.isRight(slow)) assert.deepStrictEqual(withMetadata(fast.right), slow.right)
  if (Either.isLeft(fast) && Either.isLeft(slow)) assert.deepStrictEqual(problemsOf(fast.left), problemsOf(slow.left))
}

describe("decodeInboundMessage: the guard accepts what decoding accepts", () => {
  it.prop("valid payloads", [valid], ([u]) => {
    assert.isTrue(Either.isRight(decodeFully(u)), "the arbitrary made a valid payload")
    agree(u)
    // Ingest builds a decoded payload's conversation id unchecked: the checked one must accept it.
    const d = Either.getOrThrow(decodeInboundMessage(u))
    assert.strictEqual(conversationIdOfChecked(d.connection, d.place), conversationIdOf(d.connection, d.place))
  }, { fastCheck: { numRuns: 500 } })
  it.prop("payloads with one property broken or one unknown property", [broken], ([u]) => agree(u), { fastCheck: { numRuns: 1_000 } })
  it.prop("arbitrary values", [fc.anything()], ([u]) => agree(u), { fastCheck: { numRuns: 500 } })

  it("a valid payload is used as given (no copy); an own __proto__ metadata key is dropped, as the full decode drops it", () => {
    const base = { connection: "test", place: "p", providerEventId: "e1", sender: "u", text: "hi" }
    assert.strictEqual(Either.getOrThrow(decodeInboundMessage(base)), base)
    const odd = { ...base, metadata: JSON.parse('{"__proto__": 1, "a": 2}') as Record<string, unknown> }
    assert.deepStrictEqual(Either.getOrThrow(decodeInboundMessage(odd)).metadata, { a: 2 })
    // A sender cannot choose the metadata's prototype (fast-check found `{"__proto__": []}`).
    for (const value of ["[]", '{"isAdmin": true}']) {
      const hostile = Either.getOrThrow(decodeInboundMessage({ ...base, metadata: JSON.parse(`{"__proto__": ${value}, "a": 2}`) as Record<string, unknown> })).metadata!
      assert.strictEqual(Object.getPrototypeOf(hostile), Object.prototype)
      assert.deepStrictEqual(hostile, { a: 2 })
      assert.isUndefined((hostile as Record<string, unknown>).isAdmin)
    }
  })

  it("a place is refused, naming place, when it holds a control character or a lone surrogate, is '.' or '..', has a space at an end or is over 255 characters; every channel ingests through this", () => {
    const base = { connection: "test", providerEventId: "e1", sender: "u", text: "hi" }
    for (const place of ["\u0000", "a\u0000b", "a\nb", "a\tb", "\u001b[31m", "a\u007f", "a\u0085b", "a\ud800", "\udc00b", ".", "..", " a", "a ", "", "p".repeat(256)]) {
      const r = decodeInboundMessage({ ...base, place })
      assert.isTrue(Either.isLeft(r), JSON.stringify(place))
      if (Either.isLeft(r)) assert.deepStrictEqual(problemsOf(r.left).map((p) => p.path), ["place"], JSON.stringify(place))
    }
    for (const place of ["p".repeat(255), "日本", "a b", "…", "😀", "C0123/1700000000.000100", "!room:example.org", "*"]) assert.isTrue(Either.isRight(decodeInboundMessage({ ...base, place })), place)
    // A conversation id made any other way is refused too.
    assert.throws(() => conversationIdOf("web", "a\nb"))
  })

  it("a text over MAX_TEXT_CHARS (the HTTP API's and `pynchy send`'s limit) is refused by ingest too", () => {
    const base = { connection: "test", place: "p", providerEventId: "e1", sender: "u" }
    assert.isTrue(Either.isRight(decodeInboundMessage({ ...base, text: "x".repeat(MAX_TEXT_CHARS) })))
    const r = decodeInboundMessage({ ...base, text: "x".repeat(MAX_TEXT_CHARS + 1) })
    assert.isTrue(Either.isLeft(r) && problemsOf(r.left).some((p) => p.path === "text"))
  })

  it("a refused payload names every problem", () => {
    const r = decodeInboundMessage({ connection: "Not A Slug!", place: "", providerEventId: "e1", sender: "u", text: "hi", colour: "red" })
    assert.isTrue(Either.isLeft(r))
    const message = Either.isLeft(r) ? r.left.message : ""
    for (const part of ["connection", "place", "colour"]) assert.include(message, part)
  })
})
