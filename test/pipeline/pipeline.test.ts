import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { Ingest } from "../../src/pipeline/Ingest.js"
import { MessageStore } from "../../src/db/MessageStore.js"
import { ConversationId } from "../../src/domain/ids.js"
import { makeTestHost } from "../../layers/test.js"
import { tempDir } from "../support/db.js"
import { awaitLatestTurnEnded, awaitSettled, recordingConfig, sentLines } from "../support/host.js"

const msg = (id: string, text: string, place = "room") => ({ connection: "test", place, providerEventId: id, sender: "u", text })

describe("pipeline end to end (memory database, scripted executor, recording channel)", () => {
  it.scopedLive("an ingested message gets exactly one reply, sent through the channel", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const ctx = yield* Layer.build(makeTestHost(recordingConfig(dir)))
      const ingest = Effect.provide(Ingest, ctx)
      const { ingest: push } = yield* ingest
      const first = yield* push(msg("e1", "hello"))
      assert.isFalse(first.duplicate)
      const dup = yield* push(msg("e1", "hello"))
      assert.isTrue(dup.duplicate)
      assert.strictEqual(dup.messageId, first.messageId)
      const conv = ConversationId.make("test:room")
      const settled = yield* awaitSettled(conv, 1).pipe(Effect.provide(ctx))
      assert.deepStrictEqual(settled.map((d) => [d.status, d.text]), [["sent", "echo: hello"]])
      assert.deepStrictEqual(sentLines(dir).map((l) => l.text), ["echo: hello"])
      const turn = yield* awaitLatestTurnEnded(conv).pipe(Effect.provide(ctx))
      assert.strictEqual(turn.status, "completed")
      const m = yield* Effect.flatMap(MessageStore, (s) => s.get(first.messageId)).pipe(Effect.provide(ctx))
      assert.strictEqual(m._tag === "Some" ? m.value.handledBy : null, turn.id)
    }))

  it.scopedLive("bad payloads get a typed error naming the field; unrouted ones a NoRoute", () =>
    Effect.gen(function* () {
      const ctx = yield* Layer.build(makeTestHost(recordingConfig()))
      const { ingest } = yield* Effect.provide(Ingest, ctx)
      const bad = yield* Effect.flip(ingest({ connection: "test", place: "room", sender: "u", text: 5 }))
      assert.strictEqual(bad._tag, "InvalidInput")
      if (bad._tag === "InvalidInput") {
        const paths = bad.problems.map((p) => p.path)
        assert.include(paths, "providerEventId")
        assert.include(paths, "text")
      }
      const unrouted = yield* Effect.flip(ingest({ ...msg("x", "hi"), connection: "nowhere" }))
      assert.strictEqual(unrouted._tag, "NoRoute")
    }))

  it.scopedLive("many conversations: every message answered once, in order per conversation", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const ctx = yield* Layer.build(makeTestHost(recordingConfig(dir, { maxConcurrentTurns: 2 })))
      const { ingest } = yield* Effect.provide(Ingest, ctx)
      const places = ["a", "b", "c", "d", "e"]
      yield* Effect.forEach(Array.from({ length: 100 }, (_, i) => i), (i) => ingest(msg(`e${i}`, `m${i}`, places[i % 5])), { concurrency: 16 })
      for (const p of places) yield* awaitSettled(ConversationId.make(`test:${p}`), 20).pipe(Effect.provide(ctx))
      const lines = sentLines(dir)
      assert.strictEqual(lines.length, 100)
      assert.strictEqual(new Set(lines.map((l) => l.key)).size, 100)
      for (const p of places) {
        const texts = lines.filter((l) => l.conversation === `test:${p}`).map((l) => Number(l.text.replace("echo: m", "")))
        assert.deepStrictEqual(texts, [...texts].sort((x, y) => x - y))
      }
    }))
})
