import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Logger, LogLevel } from "effect"
import * as path from "node:path"
import { makeTestHost } from "../../layers/test.js"
import { TurnStore } from "../../src/db/TurnStore.js"
import { ConversationId } from "../../src/domain/ids.js"
import { Ingest } from "../../src/pipeline/Ingest.js"
import type { AgentSessionRuntimeRegistry } from "../../src/runtimes/agent-session/AgentSessionRuntimeRegistry.js"
import { AgentSessions } from "../../src/runtimes/agent-session/AgentSessions.js"
import type { SessionRef } from "../../src/runtimes/agent-session/runtime.js"
import { tempDir } from "../support/db.js"
import { awaitLatestTurnEnded, awaitSettled, recordingConfig } from "../support/host.js"
import { eventually } from "../support/eventually.js"

const quiet = Logger.minimumLogLevel(LogLevel.None)
const message = (place: string, id: string, text: string) => ({ connection: "test", place, providerEventId: `${place}-${id}`, sender: "u", text })

/**
 * External sessions living outside the host (they survive host restarts), in ClawConnect's
 * style: read by `ref.sessionId`, answering loose observations; an unknown id answers null.
 */
const sessions: Record<string, { answer: Record<string, unknown>; prompts: Array<string>; hang?: boolean }> = {}
const register = (registry: AgentSessionRuntimeRegistry.Service) =>
  registry.register({
    id: "ext",
    provider: "test",
    inspect: (ref: SessionRef) => sessions[ref.sessionId]?.answer ?? null,
    continue: (ref: SessionRef, request: { prompt?: string }) => {
      const s = sessions[ref.sessionId]
      if (s === undefined) return null
      s.prompts.push(request.prompt ?? "")
      return s.hang === true ? new Promise(() => {}) : s.answer
    }
  })

describe("delegated turns (agent-session runtimes)", () => {
  it.live("each state ends the turn its own way: completed replies, needs_input tells the user and the turn is stored blocked (final, the next message runs), dead and a missing session fail with a notice", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      sessions.done = { answer: { state: "completed", finalResponse: "the answer", latestResponse: "thinking..." }, prompts: [] }
      sessions.asking = { answer: { state: "needs_input", latestResponse: "Which branch should I use?", remoteUrl: "https://example.test/s/asking" }, prompts: [] }
      sessions.crashed = { answer: { state: "dead", termination: { reason: "died", exitCode: 137, message: "killed" } }, prompts: [] }
      const host = makeTestHost(recordingConfig(dir), { databaseFile: path.join(dir, "pynchy.db"), agentSessionRuntimes: register }).pipe(Layer.provide(quiet))
      yield* Effect.scoped(Effect.gen(function* () {
        const ctx = yield* Layer.build(host)
        const { ingest } = yield* Effect.provide(Ingest, ctx)
        const agentSessions = yield* Effect.provide(AgentSessions, ctx)
        const turns = yield* Effect.provide(TurnStore, ctx)
        const outcome = (place: string, sessionId: string) =>
          Effect.gen(function* () {
            const conv = ConversationId.make(`test:${place}`)
            yield* ingest(message(place, "0", "hello"))
            yield* awaitSettled(conv, 1).pipe(Effect.provide(ctx))
            yield* agentSessions.attach(conv, { runtimeId: "ext", sessionId })
            yield* ingest(message(place, "1", "please do the thing"))
            const settled = yield* awaitSettled(conv, 2).pipe(Effect.provide(ctx))
            const turn = yield* awaitLatestTurnEnded(conv).pipe(Effect.provide(ctx))
            return { delivered: settled.slice(1).map((d) => [d.kind, d.text]), turn: [turn.status, turn.error] }
          })

        const completed = yield* outcome("done", "done")
        assert.deepStrictEqual(completed, { delivered: [["reply", "the answer"]], turn: ["completed", null] })
        assert.deepStrictEqual(sessions.done!.prompts, ["please do the thing"])

        const blocked = yield* outcome("asking", "asking")
        assert.deepStrictEqual(blocked.turn, ["blocked", "needs_input"])
        assert.strictEqual(blocked.delivered.length, 1)
        const [kind, text] = blocked.delivered[0]!
        assert.strictEqual(kind, "notice")
        assert.include(text!, "ext/asking is waiting for input")
        assert.include(text!, "It last said: Which branch should I use?")
        assert.include(text!, "https://example.test/s/asking")
        assert.notInclude(text!, "Sorry")
        // Blocked is final for the queue: not retried, and the conversation's next message runs.
        sessions.asking!.answer = { state: "completed", finalResponse: "main it is" }
        yield* ingest(message("asking", "2", "use main"))
        const next = yield* awaitSettled(ConversationId.make("test:asking"), 3).pipe(Effect.provide(ctx))
        assert.deepStrictEqual(next.slice(2).map((d) => [d.kind, d.text]), [["reply", "main it is"]])
        yield* awaitLatestTurnEnded(ConversationId.make("test:asking")).pipe(Effect.provide(ctx))
        const [answered, stillBlocked] = yield* turns.recent(ConversationId.make("test:asking"), 2)
        assert.deepStrictEqual([answered!.status, stillBlocked!.status, stillBlocked!.attempts], ["completed", "blocked", 1])
        assert.deepStrictEqual(sessions.asking!.prompts, ["please do the thing", "use main"])

        const dead = yield* outcome("crashed", "crashed")
        assert.deepStrictEqual(dead.turn[0], "failed")
        assert.match(dead.delivered[0]![1]!, /could not answer: the delegated session ext\/crashed ended without finishing the turn \(killed\)/)

        const missing = yield* outcome("missing", "no-such-session")
        assert.deepStrictEqual(missing.turn[0], "failed")
        assert.match(missing.delivered[0]![1]!, /could not answer: the delegated session ext\/no-such-session could not be reached \(session_not_found\)/)
      }))
    }))

  it.live("a working session is followed until it ends; after a restart the turn is inspected, not replayed", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const conv = ConversationId.make("test:room")
      sessions.long = { answer: { state: "completed", finalResponse: "first answer" }, prompts: [] }
      const host = () => makeTestHost(recordingConfig(dir), { databaseFile: path.join(dir, "pynchy.db"), agentSessionRuntimes: register }).pipe(Layer.provide(quiet))

      const firstTurn = yield* Effect.scoped(Effect.gen(function* () {
        const ctx = yield* Layer.build(host())
        const { ingest } = yield* Effect.provide(Ingest, ctx)
        yield* ingest(message("room", "0", "hello"))
        yield* awaitSettled(conv, 1).pipe(Effect.provide(ctx))
        const agentSessions = yield* Effect.provide(AgentSessions, ctx)
        yield* agentSessions.attach(conv, { runtimeId: "ext", sessionId: "long" })
        yield* ingest(message("room", "1", "please do the thing"))
        const settled = yield* awaitSettled(conv, 2).pipe(Effect.provide(ctx))
        assert.deepStrictEqual(settled.map((d) => d.text), ["echo: hello", "first answer"])
        // The next request hangs in the session; the host goes down with the turn running.
        sessions.long!.hang = true
        yield* ingest(message("room", "2", "long one"))
        const turns = yield* Effect.provide(TurnStore, ctx)
        yield* eventually(() => (sessions.long!.prompts.length >= 2 ? true : undefined), { label: "the second prompt in the long session" })
        return (yield* turns.recent(conv, 1))[0]!
      }))
      assert.strictEqual(firstTurn.status, "running")
      assert.match(firstTurn.owner!.executor, /^attachment:\d+$/)

      // Meanwhile the session finished on its own.
      sessions.long!.answer = { state: "idle", latestResponse: "done while you were away" }
      yield* Effect.scoped(Effect.gen(function* () {
        const ctx = yield* Layer.build(host())
        const settled = yield* awaitSettled(conv, 3).pipe(Effect.provide(ctx))
        assert.deepStrictEqual(settled.map((d) => [d.text, d.turnId]).at(-1), ["done while you were away", firstTurn.id])
        // Inspected, not replayed: `continue` saw the long request once.
        assert.deepStrictEqual(sessions.long!.prompts, ["please do the thing", "long one"])
        const turn = yield* awaitLatestTurnEnded(conv).pipe(Effect.provide(ctx))
        assert.deepStrictEqual([turn.id, turn.status], [firstTurn.id, "completed"])
      }))
    }))
})
