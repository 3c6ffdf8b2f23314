import { assert, describe, it } from "@effect/vitest"
import { Chunk, Clock, Effect, Either, Layer, Logger, LogLevel, TestClock, TestServices } from "effect"
import { makeTestHost } from "../../layers/test.js"
import { decodeConfig } from "../../src/config/HostConfig.js"
import { DeliveryStore } from "../../src/db/DeliveryStore.js"
import { TurnStore } from "../../src/db/TurnStore.js"
import { ConversationId, ExecutorId } from "../../src/domain/ids.js"
import { AgentExecutor, ExecutorLiveness, TurnFailed } from "../../src/pipeline/AgentExecutor.js"
import type { Channel } from "../../src/contracts/channel.js"
import { Channels } from "../../src/pipeline/Channels.js"
import { Ingest } from "../../src/pipeline/Ingest.js"
import { tempDir } from "../support/db.js"
import { eventually } from "../support/eventually.js"
import { awaitSettled, recordingConfig } from "../support/host.js"

const quiet = Logger.minimumLogLevel(LogLevel.None)
const msg = (id: string, text: string) => ({ connection: "test", place: "room", providerEventId: id, sender: "u", text })
const conv = ConversationId.make("test:room")

/** Waits until `probe` (on the test's services) gives a value other than false; fails naming what it waited for. */
const until = <A>(label: string, probe: Effect.Effect<A | boolean | undefined>): Effect.Effect<A> =>
  eventually(Effect.map(probe, (v) => (v === false ? undefined : (v as A))), { label })

describe("pipeline failures", () => {
  it.scoped("a retryable failure is retried after base × 2^(attempt−1), then fails for good and the user is told", () =>
    Effect.gen(function* () {
      // When each attempt started, on the test's clock.
      const attempts: Array<number> = []
      const executor = Layer.merge(
        Layer.succeed(AgentExecutor, AgentExecutor.of({
          allocate: () => Effect.succeed(ExecutorId.make(`inproc:${attempts.length}`)),
          execute: (input) =>
            Effect.flatMap(Clock.currentTimeMillis, (now) => {
              const text = input.messages[0]!.text
              if (!text.startsWith("!fail")) return input.reply(`echo: ${text}`)
              attempts.push(now)
              return new TurnFailed({ code: "scripted_failure", reason: "asked to fail", retryable: true })
            }),
          adopt: () => new TurnFailed({ code: "not_adoptable", reason: "in-process", retryable: true })
        })),
        Layer.succeed(ExecutorLiveness, ExecutorLiveness.of({ isAlive: () => Effect.succeed(false) }))
      )
      // Not a multiple of the host's own periodic timers, so the retry timer is told apart.
      const base = 1_234
      const ctx = yield* Layer.build(makeTestHost(recordingConfig(tempDir(), { maxTurnAttempts: 3, retryBaseMs: base }), { executor }).pipe(Layer.provide(quiet)))
      const { ingest } = yield* Effect.provide(Ingest, ctx)
      const turns = yield* Effect.provide(TurnStore, ctx)
      yield* ingest(msg("1", "!fail please"))
      // The first attempt fails at 0; the second is due at base, the third base × 2 after that.
      for (const [attempt, due] of [[1, base], [2, base + 2 * base]] as const) {
        yield* until(`attempt ${attempt} to fail`, Effect.sync(() => attempts.length === attempt))
        const [turn] = yield* until(`turn queued again after attempt ${attempt}`, Effect.map(turns.recent(conv, 1), (ts) => ts[0]?.status === "queued" ? ts : undefined))
        assert.strictEqual(turn!.attempts, attempt)
        // The timer that dispatches the retry wakes exactly when the turn is due.
        yield* until(`a timer at ${due} ms`, Effect.map(TestClock.sleeps(), (sleeps) => Chunk.toReadonlyArray(sleeps).includes(due)))
        yield* TestClock.setTime(due)
      }
      yield* until("attempt 3 to fail", Effect.sync(() => attempts.length === 3))
      assert.deepStrictEqual(attempts, [0, base, 3 * base])
      const settled = yield* awaitSettled(conv, 1).pipe(Effect.provide(ctx), TestServices.provideLive)
      assert.deepStrictEqual(settled.map((d) => [d.kind, d.status]), [["notice", "sent"]])
      assert.include(settled[0]!.text, "could not answer")
      const [turn] = yield* turns.recent(conv, 1)
      assert.strictEqual(turn!.status, "failed")
      assert.strictEqual(turn!.attempts, 3)
      // The conversation is free again: the next message gets a new turn and an answer.
      yield* ingest(msg("2", "hello"))
      const after = yield* awaitSettled(conv, 2).pipe(Effect.provide(ctx), TestServices.provideLive)
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

  it.scoped("a channel that rejects: retried after 200 then 400 ms, then failed, and a notice is attempted the same way; nothing else is lost", () =>
    Effect.gen(function* () {
      const config = recordingConfig(tempDir())
      const ctx = yield* Layer.build(makeTestHost(config).pipe(Layer.provide(quiet)))
      // When each send was called, on the test's clock (the channel is a Promise API: no Effect to ask).
      const clock = yield* Effect.clock
      const calls: Array<number> = []
      const rejecting: Channel = { name: "test", idempotentResends: false, send: async () => { calls.push(clock.unsafeCurrentTimeMillis()); throw new Error("platform says no") } }
      // Bound after the plugin channel: it replaces it for this connection.
      yield* Effect.flatMap(Channels, (c) => c.bind(rejecting)).pipe(Effect.asVoid, Effect.provide(ctx))
      const { ingest } = yield* Effect.provide(Ingest, ctx)
      yield* ingest(msg("1", "hi"))
      // Each delivery: a try, then retries 200 and 400 ms after the failures before them.
      for (const [n, due] of [[1, 200], [2, 600], [4, 800], [5, 1_200]] as const) {
        yield* until(`send call ${n}`, Effect.sync(() => calls.length === n))
        yield* until(`a timer at ${due} ms`, Effect.map(TestClock.sleeps(), (sleeps) => Chunk.toReadonlyArray(sleeps).includes(due)))
        yield* TestClock.setTime(due)
      }
      const settled = yield* awaitSettled(conv, 2).pipe(Effect.provide(ctx), TestServices.provideLive)
      assert.deepStrictEqual(settled.map((d) => [d.kind, d.status]), [["reply", "failed"], ["notice", "failed"]])
      assert.strictEqual(settled[0]!.error, "platform says no")
      // Three calls per delivery, and the notice (recorded when the reply failed) begets no further notice.
      assert.deepStrictEqual(calls, [0, 200, 600, 600, 800, 1_200])
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
