import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import type { AgentSessionStatus } from "../../../src/domain/attachment.js"
import { ConversationId } from "../../../src/domain/ids.js"
import { AgentSessionRuntimeRegistry } from "../../../src/runtimes/agent-session/AgentSessionRuntimeRegistry.js"
import { AgentSessions } from "../../../src/runtimes/agent-session/AgentSessions.js"
import { AttachmentStore } from "../../../src/runtimes/agent-session/AttachmentStore.js"
import { loadAgentSessionRuntimes } from "../../../src/runtimes/agent-session/loader.js"
import { skipWithout } from "../../support/system.js"
import { EXAMPLE, startTmux } from "./tmux.js"

const skip = skipWithout("tmux", "apt-get install -y tmux")

describe.skipIf(skip)("examples/local-tmux-runtime against real tmux", () => {
  let server: ReturnType<typeof startTmux>
  let previousSocket: string | undefined
  beforeAll(() => {
    server = startTmux()
    previousSocket = process.env.LOCAL_TMUX_SOCKET
    process.env.LOCAL_TMUX_SOCKET = server.socket
  })
  afterAll(() => {
    server?.stop()
    if (previousSocket === undefined) delete process.env.LOCAL_TMUX_SOCKET
    else process.env.LOCAL_TMUX_SOCKET = previousSocket
  })

  const loaded = Layer.effectDiscard(loadAgentSessionRuntimes([EXAMPLE])).pipe(Layer.provideMerge(AgentSessionRuntimeRegistry.layer))
  const stack = AgentSessions.layer.pipe(Layer.provideMerge(Layer.merge(AttachmentStore.layerMemory, loaded)))
  const ref = (sessionId: string) => ({ runtime: "local-tmux", sessionId })

  it.live("loads through the module loader and inspects idle, running, completed, dead and missing sessions", () =>
    Effect.gen(function* () {
      const registry = yield* AgentSessionRuntimeRegistry
      assert.deepStrictEqual(yield* registry.runtimes, [{ id: "local-tmux", provider: "tmux", capabilities: { inspect: true, continue: true, detach: true } }])
      const work = yield* registry.inspect(ref("work"))
      assert.deepStrictEqual([work.state, work.alive], ["idle", true])
      assert.include(work.latestResponse!, "$")
      assert.strictEqual((yield* registry.inspect(ref("busy"))).state, "running")
      // A finished pane: its exit status decides, when tmux recorded one (it sometimes never does);
      // never a wrong one.
      const ok = yield* registry.inspect(ref("ok"))
      if (ok.state === "completed") assert.deepStrictEqual([ok.termination?.exitCode, ok.finalResponse?.includes("all good")], [0, true])
      else assert.deepStrictEqual([ok.state, ok.termination?.reason], ["dead", "unknown"])
      const done = yield* registry.inspect(ref("done"))
      assert.strictEqual(done.state, "dead")
      if (done.termination?.exitCode !== undefined) assert.deepStrictEqual([done.termination.reason, done.termination.exitCode], ["died", 3])
      const missing = yield* registry.inspect(ref("nope"))
      assert.deepStrictEqual([missing.state, missing.error?.code], ["unavailable", "session_not_found"])
    }).pipe(Effect.provide(stack)))

  it.live("a pane that just died reads its real exit status or says it has none, never a wrong one (tmux records it after marking the pane dead)", () =>
    Effect.gen(function* () {
      const registry = yield* AgentSessionRuntimeRegistry
      const expected = (i: number) => (i % 2 === 0 ? 0 : 5)
      // Exact, or explicitly unknown (tmux itself sometimes never records a status): never another number.
      const check = (i: number, s: AgentSessionStatus) => {
        if (s.termination?.exitCode !== undefined) assert.strictEqual(s.termination.exitCode, expected(i))
        else assert.strictEqual(s.termination?.reason, "unknown")
        if (s.termination?.exitCode === 0) assert.strictEqual(s.state, "completed")
        if (s.termination?.exitCode === 5) assert.strictEqual(s.state, "dead")
      }
      for (let i = 0; i < 4; i++) {
        server.run("new-session", "-d", "-s", `quick${i}`, `sleep 0.${i + 2}; exit ${expected(i)}`)
        const s = yield* registry.inspect(ref(`quick${i}`))
        if (s.state === "completed" || s.state === "dead") check(i, s)
        else assert.include(["idle", "running"], s.state)
      }
      for (let i = 0; i < 4; i++) {
        let s = yield* registry.inspect(ref(`quick${i}`))
        while (s.state !== "completed" && s.state !== "dead") s = yield* Effect.zipRight(Effect.sleep("20 millis"), registry.inspect(ref(`quick${i}`)))
        check(i, s)
      }
    }).pipe(Effect.provide(stack)), 120_000)

  it.live("a delegated turn types into the pane and the reply is what the shell printed", () =>
    Effect.gen(function* () {
      const sessions = yield* AgentSessions
      const conv = ConversationId.make("terminal:tmux")
      yield* sessions.attach(conv, { runtimeId: "local-tmux", sessionId: "work" })
      const status = yield* sessions.continueTurn(conv, { prompt: "echo hello-$((6*7))" })
      assert.strictEqual(status.state, "idle")
      // The shell evaluated the arithmetic: the keys really ran in the pane.
      assert.match(status.finalResponse!, /^hello-42$/m)
      const inspected = yield* sessions.inspect(conv)
      assert.include(inspected.status.latestResponse!, "hello-42")
      assert.strictEqual(yield* sessions.recoverTurn(conv), "completed")
    }).pipe(Effect.provide(stack)))

  it.live("recovery re-adopts a running session, completes a finished one, releases a dead or missing one", () =>
    Effect.gen(function* () {
      const sessions = yield* AgentSessions
      const verdicts = []
      for (const session of ["busy", "done", "nope"]) {
        const conv = ConversationId.make(`terminal:${session}`)
        yield* sessions.attach(conv, { runtimeId: "local-tmux", sessionId: session })
        verdicts.push(yield* sessions.recoverTurn(conv))
      }
      assert.deepStrictEqual(verdicts, ["running", "released", "released"])
    }).pipe(Effect.provide(stack)))

  it.live("detach leaves the tmux session running; with stopRuntime the example kills it and answers dead", () =>
    Effect.gen(function* () {
      const sessions = yield* AgentSessions
      const conv = ConversationId.make("terminal:detach")
      yield* sessions.attach(conv, { runtimeId: "local-tmux", sessionId: "busy" })
      const detached = yield* sessions.detach(conv)
      assert.strictEqual(detached.attachment.state, "detached")
      assert.isTrue(server.hasSession("busy"))
      server.run("new-session", "-d", "-s", "doomed", "sleep 600")
      yield* sessions.attach(conv, { runtimeId: "local-tmux", sessionId: "doomed" })
      const stopped = yield* sessions.detach(conv, { reason: "no longer needed", stopRuntime: true })
      assert.deepStrictEqual([stopped.status?.state, stopped.status?.termination?.reason], ["dead", "cancelled"])
      assert.isFalse(server.hasSession("doomed"))
    }).pipe(Effect.provide(stack)))
})
