import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Layer, Logger, LogLevel } from "effect"
import { makeTestHost } from "../../layers/test.js"
import { decodeConfig } from "../../src/config/HostConfig.js"
import { DeliveryStore } from "../../src/db/DeliveryStore.js"
import { TurnStore } from "../../src/db/TurnStore.js"
import { ConversationId } from "../../src/domain/ids.js"
import type { Channel } from "../../src/pipeline/channel-contract.js"
import { Channels } from "../../src/pipeline/Channels.js"
import { Ingest } from "../../src/pipeline/Ingest.js"
import { tempDir } from "../support/db.js"
import { awaitSettled, recordingConfig } from "../support/host.js"

const quiet = Logger.minimumLogLevel(LogLevel.None)
const msg = (id: string, text: string) => ({ connection: "test", place: "room", providerEventId: id, sender: "u", text })
const conv = ConversationId.make("test:room")

describe("pipeline failures", () => {
  it.scopedLive("a retryable failure is retried with backoff, then fails for good and the user is told", () =>
    Effect.gen(function* () {
      const ctx = yield* Layer.build(makeTestHost(recordingConfig(tempDir(), { maxTurnAttempts: 3, retryBaseMs: 5 })).pipe(Layer.provide(quiet)))
      const { ingest } = yield* Effect.provide(Ingest, ctx)
      yield* ingest(msg("1", "!fail please"))
      const settled = yield* awaitSettled(conv, 1).pipe(Effect.provide(ctx))
      assert.deepStrictEqual(settled.map((d) => [d.kind, d.status]), [["notice", "sent"]])
      assert.include(settled[0]!.text, "could not answer")
      const [turn] = yield* Effect.flatMap(TurnStore, (t) => t.recent(conv, 1)).pipe(Effect.provide(ctx))
      assert.strictEqual(turn!.status, "failed")
      assert.strictEqual(turn!.attempts, 3)
      // The conversation is free again: the next message gets a new turn and an answer.
      yield* ingest(msg("2", "hello"))
      const after = yield* awaitSettled(conv, 2).pipe(Effect.provide(ctx))
      assert.deepStrictEqual(after.map((d) => d.text).slice(1), ["echo: hello"])
    }))

  it.scopedLive("a non-retryable failure fails at once", () =>
    Effect.gen(function* () {
      const ctx = yield* Layer.build(makeTestHost(recordingConfig(tempDir(), { maxTurnAttempts: 5 })).pipe(Layer.provide(quiet)))
      const { ingest } = yield* Effect.provide(Ingest, ctx)
      yield* ingest(msg("1", "!fatal"))
      yield* awaitSettled(conv, 1).pipe(Effect.provide(ctx))
      const [turn] = yield* Effect.flatMap(TurnStore, (t) => t.recent(conv, 1)).pipe(Effect.provide(ctx))
      assert.strictEqual(turn!.status, "failed")
      assert.strictEqual(turn!.attempts, 1)
    }))

  it.scopedLive("a channel that rejects: retried, then failed, and a notice is attempted; nothing else is lost", () =>
    Effect.gen(function* () {
      const config = recordingConfig(tempDir())
      const ctx = yield* Layer.build(makeTestHost(config).pipe(Layer.provide(quiet)))
      let calls = 0
      const rejecting: Channel = { name: "test", idempotentResends: false, send: async () => { calls++; throw new Error("platform says no") } }
      // Bound after the plugin channel: it replaces it for this connection.
      yield* Effect.flatMap(Channels, (c) => c.bind(rejecting)).pipe(Effect.asVoid, Effect.provide(ctx))
      const { ingest } = yield* Effect.provide(Ingest, ctx)
      yield* ingest(msg("1", "hi"))
      const settled = yield* awaitSettled(conv, 2).pipe(Effect.provide(ctx))
      assert.deepStrictEqual(settled.map((d) => [d.kind, d.status]), [["reply", "failed"], ["notice", "failed"]])
      assert.strictEqual(settled[0]!.error, "platform says no")
      // Three calls per delivery (one try and two retries), and the notice begets no further notice.
      assert.strictEqual(calls, 6)
      const pending = yield* Effect.flatMap(DeliveryStore, (d) => d.pending).pipe(Effect.provide(ctx))
      assert.strictEqual(pending.length, 0)
    }))

  it.scopedLive("deliveries wait while their connection has no channel, and go out when one is bound", () =>
    Effect.gen(function* () {
      const base = recordingConfig(tempDir())
      const config = Either.getOrThrow(decodeConfig({
        dataDir: base.dataDir,
        workspaces: [{ id: "main" }],
        routes: [{ connection: "late", place: "*", workspace: "main" }]
      }, "test"))
      const ctx = yield* Layer.build(makeTestHost(config).pipe(Layer.provide(quiet)))
      const { ingest } = yield* Effect.provide(Ingest, ctx)
      const lateConv = ConversationId.make("late:room")
      yield* ingest({ connection: "late", place: "room", providerEventId: "x", sender: "u", text: "later" })
      // Wait for the turn to complete: its reply is recorded, but no channel serves `late`.
      const turns = yield* Effect.provide(TurnStore, ctx)
      while ((yield* turns.recent(lateConv, 1))[0]?.status !== "completed") yield* Effect.yieldNow()
      const store = yield* Effect.provide(DeliveryStore, ctx)
      assert.deepStrictEqual((yield* store.byConversation(lateConv, 10)).map((d) => d.status), ["pending"])
      const sent: Array<string> = []
      const channels = yield* Effect.provide(Channels, ctx)
      yield* Effect.asVoid(channels.bind({ name: "late", idempotentResends: true, send: async (d) => void sent.push(d.text) }))
      yield* awaitSettled(lateConv, 1).pipe(Effect.provide(ctx))
      assert.deepStrictEqual(sent, ["echo: later"])
    }))
})
