import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Logger, LogLevel } from "effect"
import * as path from "node:path"
import { makeTestHost } from "../../layers/test.js"
import { MessageStore } from "../../src/db/MessageStore.js"
import { TurnStore } from "../../src/db/TurnStore.js"
import { ConversationId, ExecutorId } from "../../src/domain/ids.js"
import { AgentExecutor, ExecutorLiveness, TurnFailed } from "../../src/pipeline/AgentExecutor.js"
import { Ingest } from "../../src/pipeline/Ingest.js"
import { tempDir } from "../support/db.js"
import { awaitLatestTurnEnded, awaitSettled, recordingConfig } from "../support/host.js"

const quiet = Logger.minimumLogLevel(LogLevel.None)
const conv = ConversationId.make("test:room")
const SURVIVOR = ExecutorId.make("sandbox:survivor")

/** An executor whose runs outlive the host (a sandbox still running after a restart). */
const executor = (behaviour: "run-forever" | "adopt") =>
  Layer.merge(
    Layer.succeed(AgentExecutor, AgentExecutor.of({
      allocate: () => Effect.succeed(SURVIVOR),
      execute: () => (behaviour === "run-forever" ? Effect.never : new TurnFailed({ code: "x", reason: "x", retryable: false })),
      adopt: (input) => input.reply(`adopted ${input.messages.map((m) => m.text).join(",")}`)
    })),
    Layer.succeed(ExecutorLiveness, ExecutorLiveness.of({ isAlive: (id) => Effect.succeed(id === SURVIVOR) }))
  )

describe("recovery of a turn whose executor survived the restart", () => {
  it.live("its claims are kept, it is re-adopted by the new epoch, and it completes as the same turn", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const config = recordingConfig(dir)
      const databaseFile = path.join(dir, "pynchy.db")
      const first = yield* Effect.scoped(Effect.gen(function* () {
        const ctx = yield* Layer.build(makeTestHost(config, { databaseFile, executor: executor("run-forever") }).pipe(Layer.provide(quiet)))
        const { ingest } = yield* Effect.provide(Ingest, ctx)
        const m = yield* ingest({ connection: "test", place: "room", providerEventId: "1", sender: "u", text: "long job" })
        const turns = yield* Effect.provide(TurnStore, ctx)
        while ((yield* turns.recent(conv, 1))[0]?.status !== "running") yield* Effect.yieldNow()
        return { messageId: m.messageId, turn: (yield* turns.recent(conv, 1))[0]! }
      }))
      // The host stopped with the turn running; its executor is alive.
      yield* Effect.scoped(Effect.gen(function* () {
        const ctx = yield* Layer.build(makeTestHost(config, { databaseFile, executor: executor("adopt") }).pipe(Layer.provide(quiet)))
        const settled = yield* awaitSettled(conv, 1).pipe(Effect.provide(ctx))
        assert.deepStrictEqual(settled.map((d) => [d.text, d.status, d.turnId]), [["adopted long job", "sent", first.turn.id]])
        const turn = yield* awaitLatestTurnEnded(conv).pipe(Effect.provide(ctx))
        assert.strictEqual(turn.id, first.turn.id)
        assert.strictEqual(turn.status, "completed")
        const message = yield* Effect.flatMap(MessageStore, (s) => s.get(first.messageId)).pipe(Effect.provide(ctx))
        assert.strictEqual(message._tag === "Some" ? message.value.handledBy : null, first.turn.id)
      }))
    }))
})
