import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Logger, LogLevel } from "effect"
import * as path from "node:path"
import { makeTestHost } from "../../layers/test.js"
import { TurnStore } from "../../src/db/TurnStore.js"
import { ConversationId } from "../../src/domain/ids.js"
import { Ingest } from "../../src/pipeline/Ingest.js"
import type { AgentSessionRuntimeRegistry } from "../../src/runtimes/agent-session/AgentSessionRuntimeRegistry.js"
import { AgentSessions } from "../../src/runtimes/agent-session/AgentSessions.js"
import { tempDir } from "../support/db.js"
import { awaitSettled, recordingConfig } from "../support/host.js"
import { eventually } from "../support/eventually.js"

const quiet = Logger.minimumLogLevel(LogLevel.None)
const conv = ConversationId.make("test:room")
const message = (id: string, text: string) => ({ connection: "test", place: "room", providerEventId: id, sender: "u", text })

/** An external session living outside the host (it survives host restarts). */
const session = { requests: [] as Array<string>, state: "running" as "running" | "finished" | "unknown", output: "", hang: false }
const register = (registry: AgentSessionRuntimeRegistry.Service) =>
  registry.register({
    id: "ext",
    provider: "test",
    inspect: () => ({ state: session.state, output: session.output }),
    continue: (_ref: unknown, request: { text: string }) => {
      session.requests.push(request.text)
      return session.hang ? new Promise(() => {}) : { state: "idle", output: `session says: ${request.text}` }
    }
  })

describe("delegated turns (agent-session runtimes)", () => {
  it.live("an attached conversation's turn goes through `continue`; after a restart it is inspected, not replayed", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const databaseFile = path.join(dir, "pynchy.db")
      const config = recordingConfig(dir)
      const host = () => makeTestHost(config, { databaseFile, agentSessionRuntimes: register }).pipe(Layer.provide(quiet))

      const firstTurn = yield* Effect.scoped(Effect.gen(function* () {
        const ctx = yield* Layer.build(host())
        const { ingest } = yield* Effect.provide(Ingest, ctx)
        yield* ingest(message("0", "hello"))
        yield* awaitSettled(conv, 1).pipe(Effect.provide(ctx))
        const sessions = yield* Effect.provide(AgentSessions, ctx)
        yield* sessions.attach(conv, { runtimeId: "ext", sessionRef: "s-1" })
        yield* ingest(message("1", "please do the thing"))
        const settled = yield* awaitSettled(conv, 2).pipe(Effect.provide(ctx))
        assert.deepStrictEqual(settled.map((d) => d.text), ["echo: hello", "session says: please do the thing"])
        // The next request hangs in the session; the host goes down with the turn running.
        session.hang = true
        yield* ingest(message("2", "long one"))
        const turns = yield* Effect.provide(TurnStore, ctx)
        yield* eventually(() => session.requests.length >= 2 || undefined, { label: "the second request in the session" })
        return (yield* turns.recent(conv, 1))[0]!
      }))
      assert.strictEqual(firstTurn.status, "running")
      assert.match(firstTurn.owner!.executor, /^attachment:\d+$/)

      // Meanwhile the session finished on its own.
      session.state = "finished"
      session.output = "done while you were away"
      yield* Effect.scoped(Effect.gen(function* () {
        const ctx = yield* Layer.build(host())
        const settled = yield* awaitSettled(conv, 3).pipe(Effect.provide(ctx))
        assert.deepStrictEqual(settled.map((d) => [d.text, d.turnId]).at(-1), ["done while you were away", firstTurn.id])
        // Inspected, not replayed: `continue` saw the long request once.
        assert.deepStrictEqual(session.requests, ["please do the thing", "long one"])
        const [turn] = yield* Effect.flatMap(TurnStore, (t) => t.recent(conv, 1)).pipe(Effect.provide(ctx))
        assert.strictEqual(turn!.id, firstTurn.id)
        assert.strictEqual(turn!.status, "completed")
      }))
    }))
})
