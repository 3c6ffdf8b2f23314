import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
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
  const ref = (sessionRef: string) => ({ runtimeId: "local-tmux", provider: "tmux", sessionRef })

  it.live("loads through the module loader and inspects idle, running, finished and missing sessions", () =>
    Effect.gen(function* () {
      const registry = yield* AgentSessionRuntimeRegistry
      assert.deepStrictEqual(yield* registry.runtimes, [{ id: "local-tmux", provider: "tmux", capabilities: { inspect: true, continue: true, detach: true } }])
      const work = yield* registry.inspect(ref("work"))
      assert.strictEqual(work.state, "idle")
      assert.include(work.output!, "$")
      assert.strictEqual((yield* registry.inspect(ref("busy"))).state, "running")
      const done = yield* registry.inspect(ref("done"))
      assert.strictEqual(done.state, "finished")
      assert.include(done.detail!, "3")
      const missing = yield* registry.inspect(ref("nope"))
      assert.deepStrictEqual([missing.state, missing.code], ["unknown", "session_not_found"])
    }).pipe(Effect.provide(stack)))

  it.live("a delegated turn types into the pane and the reply is what the shell printed", () =>
    Effect.gen(function* () {
      const sessions = yield* AgentSessions
      const conv = ConversationId.make("terminal:tmux")
      yield* sessions.attach(conv, { runtimeId: "local-tmux", sessionRef: "work" })
      const status = yield* sessions.continueTurn(conv, { text: "echo hello-$((6*7))", turnId: 1 })
      assert.strictEqual(status.state, "idle")
      // The shell evaluated the arithmetic: the keys really ran in the pane.
      assert.match(status.output!, /^hello-42$/m)
      const inspected = yield* sessions.inspect(conv)
      assert.include(inspected.status.output!, "hello-42")
      assert.strictEqual(yield* sessions.recoverTurn(conv), "completed")
    }).pipe(Effect.provide(stack)))

  it.live("recovery re-adopts a running session, completes a finished one, releases a missing one", () =>
    Effect.gen(function* () {
      const sessions = yield* AgentSessions
      const verdicts = []
      for (const session of ["busy", "done", "nope"]) {
        const conv = ConversationId.make(`terminal:${session}`)
        yield* sessions.attach(conv, { runtimeId: "local-tmux", sessionRef: session })
        verdicts.push(yield* sessions.recoverTurn(conv))
      }
      assert.deepStrictEqual(verdicts, ["running", "completed", "released"])
    }).pipe(Effect.provide(stack)))

  it.live("detach leaves the tmux session running and marks the record detached", () =>
    Effect.gen(function* () {
      const sessions = yield* AgentSessions
      const conv = ConversationId.make("terminal:detach")
      yield* sessions.attach(conv, { runtimeId: "local-tmux", sessionRef: "busy" })
      const detached = yield* sessions.detach(conv)
      assert.deepStrictEqual([detached.status.state, detached.status.code], ["running", "detached"])
      assert.strictEqual(detached.attachment.state, "detached")
      assert.isTrue(server.hasSession("busy"))
    }).pipe(Effect.provide(stack)))
})
