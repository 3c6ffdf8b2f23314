/**
 * The agent-session contract, run against two modules loaded the way an operator loads them:
 * a fixture written to ClawConnect's published contract, and examples/local-tmux-runtime against
 * real tmux. Each implementation names the sessions it can produce; the assertions are shared.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer, TestClock } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import type { AgentSessionState } from "../../../src/domain/attachment.js"
import { AgentSessionRuntimeRegistry } from "../../../src/runtimes/agent-session/AgentSessionRuntimeRegistry.js"
import { loadAgentSessionRuntimes } from "../../../src/runtimes/agent-session/loader.js"
import type { SessionRef } from "../../../src/runtimes/agent-session/runtime.js"
import { tempDir } from "../../support/db.js"
import { skipWithout } from "../../support/system.js"
import { EXAMPLE, startTmux } from "./tmux.js"

const FIXTURE = path.resolve(import.meta.dirname, "fixtures/clawconnect-runtime.mjs")

interface Implementation {
  readonly name: string
  readonly module: string
  readonly runtime: string
  readonly skip: boolean
  readonly setup: () => void
  readonly teardown: () => void
  /** A session id per state this implementation can show. */
  readonly states: Partial<Record<AgentSessionState, string>>
  /** A session id the runtime does not have (it answers null). */
  readonly missing: string
  /** Makes the next calls throw / hang, and undoes it. */
  readonly failing: { readonly throws: () => void; readonly hangs: () => void; readonly heal: () => void; readonly session: string }
}

const fixtureFile = path.join(tempDir("pynchy-fixture-"), "sessions.json")
const write = (sessions: Record<string, unknown>) => fs.writeFileSync(fixtureFile, JSON.stringify(sessions))
const fixtureSessions: Record<string, unknown> = {
  ...Object.fromEntries(
    ["starting", "running", "idle", "needs_input", "needs_permission", "completed", "stale", "dead", "failed", "unavailable", "unknown"].map((s) => [
      `st-${s}`,
      { state: s, latestResponse: `latest of ${s}`, finalResponse: `final of ${s}`, termination: { reason: "cancelled", exitCode: 1 } }
    ])
  ),
  "explicit-null": null,
  sleeping: { state: "sleeping", alive: true },
  timestamps: { state: "running", startedAt: "2026-12-01T10:00:00.000Z", lastEventAt: 1_796_131_657_000 },
  badTimestamps: { state: "running", startedAt: "yesterday", lastEventAt: -1 },
  spoof: { state: "idle", runtime: "other-runtime", sessionId: "someone-else", provider: "evil", finalResponse: "mine" },
  meta: { state: "running", metadata: { s: "x", n: 2, b: true, o: { deep: 1 }, a: [1], z: null } },
  plainCompleted: { state: "completed", latestResponse: "only latest", lastEventAt: 5 }
}

const tmuxSkip = skipWithout("tmux", "apt-get install -y tmux")
let tmuxServer: ReturnType<typeof startTmux> | undefined
const hangBin = path.join(tempDir("pynchy-tmux-bin-"), "tmux-hang")
const pidFile = `${hangBin}.pid`
fs.writeFileSync(hangBin, `#!/bin/sh\necho $$ > ${pidFile}\nexec sleep 600\n`, { mode: 0o755 })

const implementations: ReadonlyArray<Implementation> = [
  {
    name: "a ClawConnect-style fixture module",
    module: FIXTURE,
    runtime: "fixture-runtime",
    skip: false,
    setup: () => {
      write(fixtureSessions)
      process.env.CLAWCONNECT_FIXTURE_SESSIONS = fixtureFile
    },
    teardown: () => delete process.env.CLAWCONNECT_FIXTURE_SESSIONS,
    states: Object.fromEntries(
      (["starting", "running", "idle", "needs_input", "needs_permission", "completed", "stale", "dead", "failed", "unavailable", "unknown"] as const).map((s) => [s, `st-${s}`])
    ),
    missing: "nobody-here",
    failing: {
      session: "flaky",
      throws: () => write({ ...fixtureSessions, flaky: "throw" }),
      hangs: () => write({ ...fixtureSessions, flaky: "hang" }),
      heal: () => write(fixtureSessions)
    }
  },
  {
    name: "examples/local-tmux-runtime on real tmux",
    module: EXAMPLE,
    runtime: "local-tmux",
    skip: tmuxSkip,
    setup: () => {
      tmuxServer = startTmux()
      process.env.LOCAL_TMUX_SOCKET = tmuxServer.socket
    },
    teardown: () => {
      tmuxServer?.stop()
      delete process.env.LOCAL_TMUX_SOCKET
      delete process.env.LOCAL_TMUX_BIN
    },
    // `ok` (exit 0) is `completed` only when tmux recorded its status (see tmux-runtime.test.ts).
    states: { idle: "work", running: "busy", dead: "done" },
    missing: "nope",
    failing: {
      session: "work",
      throws: () => (process.env.LOCAL_TMUX_BIN = "/nonexistent/tmux"),
      hangs: () => (process.env.LOCAL_TMUX_BIN = hangBin),
      heal: () => delete process.env.LOCAL_TMUX_BIN
    }
  }
]

describe.each(implementations)("the agent-session contract: $name", (impl) => {
  beforeAll(() => {
    if (!impl.skip) impl.setup()
  })
  afterAll(() => {
    if (!impl.skip) impl.teardown()
  })
  const loaded = Layer.effectDiscard(loadAgentSessionRuntimes([impl.module])).pipe(Layer.provideMerge(AgentSessionRuntimeRegistry.layer))
  const ref = (sessionId: string, extra: Partial<SessionRef> = {}): SessionRef => ({ runtime: impl.runtime, sessionId, ...extra })
  const inspect = (sessionId: string, extra: Partial<SessionRef> = {}) => Effect.flatMap(AgentSessionRuntimeRegistry, (r) => r.inspect(ref(sessionId, extra)))

  it.effect.skipIf(impl.skip)("every state it reports reads back as that state, identity from the ref; finalResponse only when the turn completed", () =>
    Effect.gen(function* () {
      for (const [state, sessionId] of Object.entries(impl.states)) {
        const s = yield* inspect(sessionId!)
        assert.strictEqual(s.state, state, sessionId)
        assert.deepStrictEqual([s.runtime, s.sessionId], [impl.runtime, sessionId])
        const completedTurn = state === "completed" || state === "idle"
        assert.strictEqual(s.finalResponse !== undefined, completedTurn, `${state}: finalResponse`)
        if (s.finalResponse !== undefined) assert.isTrue(s.finalResponse.length > 0)
        const terminal = completedTurn || state === "dead" || state === "failed"
        assert.strictEqual(s.termination !== undefined, terminal, `${state}: termination`)
      }
      if (impl.states.dead !== undefined) assert.strictEqual((yield* inspect(impl.states.dead)).termination?.reason === "completed", false)
    }).pipe(Effect.provide(loaded)))

  it.effect.skipIf(impl.skip)("a session the runtime does not have (null) is unavailable with session_not_found", () =>
    Effect.gen(function* () {
      const s = yield* inspect(impl.missing)
      assert.deepStrictEqual([s.state, s.error?.code, s.sessionId], ["unavailable", "session_not_found", impl.missing])
    }).pipe(Effect.provide(loaded)))

  it.effect.skipIf(impl.skip)("a throw is inspect_failed and a hang is inspect_timeout at the deadline (TestClock), each with the last known state", () =>
    Effect.gen(function* () {
      impl.failing.throws()
      const thrown = yield* inspect(impl.failing.session, { lastKnownState: "running" })
      assert.deepStrictEqual([thrown.state, thrown.error?.code], ["unavailable", "inspect_failed"])
      assert.include(thrown.detail!, "Last reported state: running")
      impl.failing.hangs()
      const fiber = yield* Effect.fork(Effect.flatMap(AgentSessionRuntimeRegistry, (r) => r.inspect(ref(impl.failing.session, { lastKnownState: "idle" }), { timeoutMs: 5_000 })))
      yield* TestClock.adjust("4999 millis")
      assert.strictEqual((yield* Fiber.poll(fiber))._tag, "None")
      yield* TestClock.adjust("1 millis")
      const hung = yield* Fiber.join(fiber)
      assert.deepStrictEqual([hung.state, hung.error?.code], ["unavailable", "inspect_timeout"])
      assert.include(hung.detail!, "Last reported state: idle")
      impl.failing.heal()
      const first = Object.values(impl.states)[0]!
      assert.notStrictEqual((yield* inspect(first)).state, "unavailable")
    }).pipe(Effect.ensuring(Effect.sync(impl.failing.heal)), Effect.provide(loaded)))
})

describe("the agent-session contract: what only the fixture can say", () => {
  beforeAll(() => implementations[0]!.setup())
  afterAll(() => implementations[0]!.teardown())
  const loaded = Layer.effectDiscard(loadAgentSessionRuntimes([FIXTURE])).pipe(Layer.provideMerge(AgentSessionRuntimeRegistry.layer))
  const inspect = (sessionId: string, extra: Partial<SessionRef> = {}) =>
    Effect.flatMap(AgentSessionRuntimeRegistry, (r) => r.inspect({ runtime: "fixture-runtime", sessionId, ...extra }))

  it.effect("unknown states read unknown; explicit null is session_not_found; ISO and epoch timestamps become epoch ms", () =>
    Effect.gen(function* () {
      assert.deepStrictEqual([(yield* inspect("sleeping")).state, (yield* inspect("sleeping")).alive], ["unknown", true])
      assert.strictEqual((yield* inspect("explicit-null")).error?.code, "session_not_found")
      const t = yield* inspect("timestamps")
      assert.deepStrictEqual([t.startedAt, t.lastEventAt], [Date.parse("2026-12-01T10:00:00.000Z"), 1_796_131_657_000])
      const bad = yield* inspect("badTimestamps")
      assert.deepStrictEqual([bad.startedAt, bad.lastEventAt], [undefined, -1])
      const plain = yield* inspect("plainCompleted")
      assert.deepStrictEqual([plain.finalResponse, plain.termination], ["only latest", { reason: "completed", at: 5 }])
      const dead = yield* inspect("st-dead")
      assert.deepStrictEqual(dead.termination, { reason: "cancelled", exitCode: 1 })
    }).pipe(Effect.provide(loaded)))

  it.effect("a reply that names another runtime, session or provider is ignored: identity is the ref's", () =>
    Effect.gen(function* () {
      const s = yield* inspect("spoof")
      assert.deepStrictEqual([s.runtime, s.sessionId, s.provider, s.finalResponse], ["fixture-runtime", "spoof", "fixture-provider", "mine"])
    }).pipe(Effect.provide(loaded)))

  it.effect("metadata: strings kept, finite numbers and booleans stringified, the rest dropped, over the ref's own", () =>
    Effect.gen(function* () {
      const s = yield* inspect("meta", { metadata: { s: "from-ref", r: "kept" } })
      assert.deepStrictEqual(s.metadata, { s: "x", r: "kept", n: "2", b: "true" })
    }).pipe(Effect.provide(loaded)))
})
