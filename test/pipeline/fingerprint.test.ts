/**
 * Ingest fingerprints through the real Ingest service (group commit) in a test host: an event id
 * reused for other content is a conflict, never a second message and never a silent duplicate.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { makeTestHost } from "../../layers/test.js"
import { MessageStore } from "../../src/db/MessageStore.js"
import { ConversationId } from "../../src/domain/ids.js"
import { Ingest } from "../../src/pipeline/Ingest.js"
import { tempDir } from "../support/db.js"
import { awaitSettled, recordingConfig, sentLines } from "../support/host.js"

const msg = (id: string, text: string, fingerprint?: string) => ({
  connection: "test",
  place: "fp",
  providerEventId: id,
  sender: "u",
  text,
  ...(fingerprint === undefined ? {} : { fingerprint })
})
const conv = ConversationId.make("test:fp")

describe("ingest fingerprints", () => {
  it.scopedLive("same event id: same fingerprint a duplicate, another a conflict, none a duplicate", () =>
    Effect.gen(function* () {
      const ctx = yield* Layer.build(makeTestHost(recordingConfig()))
      const { ingest } = yield* Effect.provide(Ingest, ctx)
      const first = yield* ingest(msg("e", "hello", "A"))
      const same = yield* ingest(msg("e", "hello", "A"))
      const other = yield* ingest(msg("e", "goodbye", "B"))
      const none = yield* ingest(msg("e", "whatever"))
      assert.deepStrictEqual(
        [first, same, other, none].map((r) => [r.duplicate, r.conflict, r.messageId]),
        [[false, false, first.messageId], [true, false, first.messageId], [true, true, first.messageId], [true, false, first.messageId]]
      )
      const bad = yield* Effect.flip(ingest({ ...msg("f", "x"), fingerprint: "" }))
      assert.deepStrictEqual(bad._tag === "InvalidInput" ? [...new Set(bad.problems.map((p) => p.path))] : [], ["fingerprint"])
    }))

  it.scopedLive("concurrent ingests of one event id with different fingerprints: one message, the others conflict", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const ctx = yield* Layer.build(makeTestHost(recordingConfig(dir)))
      const { ingest } = yield* Effect.provide(Ingest, ctx)
      // Three contents, four senders of each: the winner's own repeats are duplicates, the rest conflicts.
      const inputs = Array.from({ length: 12 }, (_, i) => msg("race", `body ${i % 3}`, `fp${i % 3}`))
      const results = yield* Effect.forEach(inputs, ingest, { concurrency: "unbounded" })
      const fresh = results.filter((r) => !r.duplicate)
      assert.strictEqual(fresh.length, 1)
      const winner = results.indexOf(fresh[0]!) % 3
      results.forEach((r, i) => {
        assert.strictEqual(r.messageId, fresh[0]!.messageId)
        assert.strictEqual(r.conflict, i % 3 !== winner, `input ${i}`)
      })
      const inbound = yield* Effect.flatMap(MessageStore, (s) => s.recent(conv, 100)).pipe(Effect.provide(ctx))
      assert.deepStrictEqual(inbound.filter((m) => m.direction === "in").map((m) => [m.id, m.text]), [[fresh[0]!.messageId, `body ${winner}`]])
      // Only the stored message is answered.
      yield* awaitSettled(conv, 1).pipe(Effect.provide(ctx))
      assert.deepStrictEqual(sentLines(dir).map((l) => l.text), [`echo: body ${winner}`])
    }))
})
