import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Option, TestClock } from "effect"
import { InvalidInput } from "../../../src/domain/errors.js"
import { ConversationId } from "../../../src/domain/ids.js"
import { AgentSessionRuntimeRegistry } from "../../../src/runtimes/agent-session/AgentSessionRuntimeRegistry.js"
import { AgentSessions } from "../../../src/runtimes/agent-session/AgentSessions.js"
import { AttachmentStore } from "../../../src/runtimes/agent-session/AttachmentStore.js"
import { NotAttached, UnknownRuntime } from "../../../src/runtimes/agent-session/errors.js"
import type { CallOptions } from "../../../src/runtimes/agent-session/runtime.js"
import { fakeRuntime, sessionsOn, statusOf, storeKinds } from "./support.js"

const conv = ConversationId.make("terminal:a")

describe("AgentSessions", () => {
  it.effect("attach validates its target and refuses an unregistered runtime; unattached calls are NotAttached", () =>
    Effect.gen(function* () {
      const sessions = yield* AgentSessions
      yield* fakeRuntime().register
      const invalid = yield* Effect.flip(sessions.attach(conv, { runtimeId: "fake", sessionId: "  ", metadata: { n: 1 } }))
      assert.instanceOf(invalid, InvalidInput)
      assert.deepStrictEqual([...new Set(invalid.problems.map((p) => p.path.split(".")[0]))], ["sessionId", "metadata"])
      // `sessionRef` is an alias of `sessionId`.
      const aliased = yield* Effect.flip(sessions.attach(conv, { runtimeId: "fake", sessionRef: "" }))
      assert.instanceOf(aliased, InvalidInput)
      assert.deepStrictEqual(aliased.problems.map((p) => p.path), ["sessionId"])
      const unknown = yield* Effect.flip(sessions.attach(conv, { runtimeId: "nope", sessionId: "s1" }))
      assert.instanceOf(unknown, UnknownRuntime)
      assert.deepStrictEqual(unknown.registered, ["fake"])
      assert.instanceOf(yield* Effect.flip(sessions.inspect(conv)), NotAttached)
      assert.instanceOf(yield* Effect.flip(sessions.continueTurn(conv, { prompt: "x" })), NotAttached)
      assert.instanceOf(yield* Effect.flip(sessions.detach(conv)), NotAttached)
      assert.strictEqual(yield* sessions.recoverTurn(conv), "released")
    }).pipe(Effect.provide(sessionsOn(AttachmentStore.layerMemory))))

  it.effect("a turn is handed to continue as { prompt } and its reply comes back as finalResponse; the answer is recorded", () =>
    Effect.gen(function* () {
      const sessions = yield* AgentSessions
      const fake = fakeRuntime()
      yield* fake.register
      fake.states.set("s1", "idle")
      const { attachment } = yield* sessions.attach(conv, { runtimeId: "fake", sessionRef: "s1" })
      assert.deepStrictEqual([attachment.provider, attachment.sessionId], ["test", "s1"])
      const status = yield* sessions.continueTurn(conv, { prompt: "hello" })
      assert.strictEqual(status.finalResponse, "reply to hello")
      const current = Option.getOrThrow(yield* sessions.current(conv))
      assert.strictEqual(current.observationToken, 1)
      assert.deepStrictEqual(current.lastStatus, status)
    }).pipe(Effect.provide(sessionsOn(AttachmentStore.layerMemory))))

  it.effect("replace supersedes the current attachment; detach keeps the record and calls the runtime only to stop it", () =>
    Effect.gen(function* () {
      const sessions = yield* AgentSessions
      yield* fakeRuntime().register
      const first = yield* sessions.attach(conv, { runtimeId: "fake", sessionId: "s1" })
      const second = yield* sessions.attach(conv, { runtimeId: "fake", sessionId: "s2" })
      assert.strictEqual(second.attachment.replaces, first.attachment.id)
      const detached = yield* sessions.detach(conv)
      assert.strictEqual(detached.status, null)
      assert.strictEqual(detached.attachment.state, "detached")
      yield* sessions.attach(conv, { runtimeId: "fake", sessionId: "s3" })
      const stopped = yield* sessions.detach(conv, { reason: "done with it", stopRuntime: true })
      assert.deepStrictEqual([stopped.status?.state, stopped.status?.termination?.reason], ["dead", "cancelled"])
      assert.deepStrictEqual((yield* sessions.history(conv)).map((r) => r.state), ["superseded", "detached", "detached"])
    }).pipe(Effect.provide(sessionsOn(AttachmentStore.layerMemory))))

  it.effect("recovery: completed or idle completes, working states re-adopt, blocked ones end blocked, the rest release", () =>
    Effect.gen(function* () {
      const sessions = yield* AgentSessions
      const fake = fakeRuntime()
      yield* fake.register
      yield* sessions.attach(conv, { runtimeId: "fake", sessionId: "s1" })
      const verdicts = []
      const states = ["completed", "idle", "starting", "running", "stale", "needs_input", "needs_permission", "dead", "failed", "unknown"] as const
      for (const state of states) {
        fake.states.set("s1", state)
        verdicts.push(yield* sessions.recoverTurn(conv))
      }
      fake.states.delete("s1")
      verdicts.push(yield* sessions.recoverTurn(conv))
      assert.deepStrictEqual(verdicts, [
        "completed", "completed", "running", "running", "running", "blocked", "blocked", "released", "released", "released", "released"
      ])
      assert.strictEqual(Option.getOrThrow(yield* sessions.current(conv)).observationToken, 11)
    }).pipe(Effect.provide(sessionsOn(AttachmentStore.layerMemory))))

  it.effect("a stale observation is refused: only a token above the stored one lands", () =>
    Effect.gen(function* () {
      const sessions = yield* AgentSessions
      yield* fakeRuntime().register
      const { attachment } = yield* sessions.attach(conv, { runtimeId: "fake", sessionId: "s1" })
      const older = yield* sessions.nextObservationToken
      const newer = yield* sessions.nextObservationToken
      assert.isTrue(yield* sessions.applyStatus(attachment.id, newer, statusOf("idle")))
      assert.isFalse(yield* sessions.applyStatus(attachment.id, older, statusOf("running")))
      assert.strictEqual(Option.getOrThrow(yield* sessions.current(conv)).lastStatus?.state, "idle")
    }).pipe(Effect.provide(sessionsOn(AttachmentStore.layerMemory))))

  it.effect("a hung continue ends the turn as continue_timeout at the deadline, never a wedge", () =>
    Effect.gen(function* () {
      const sessions = yield* AgentSessions
      const registry = yield* AgentSessionRuntimeRegistry
      yield* registry.register({
        id: "slow",
        provider: "p",
        inspect: () => ({ state: "running" }),
        continue: (_r: unknown, _q: unknown, o: CallOptions) => new Promise((_ok, fail) => o.signal.addEventListener("abort", () => fail(new Error("aborted"))))
      })
      yield* sessions.attach(conv, { runtimeId: "slow", sessionId: "s1" })
      const fiber = yield* Effect.fork(sessions.continueTurn(conv, { prompt: "x" }, { timeoutMs: 2_000 }))
      yield* TestClock.adjust("2 seconds")
      const status = yield* Fiber.join(fiber)
      assert.deepStrictEqual([status.state, status.error?.code], ["unavailable", "continue_timeout"])
    }).pipe(Effect.provide(sessionsOn(AttachmentStore.layerMemory))))
})

describe.each(storeKinds.filter((k) => k.durable))("AgentSessions across a restart on $name", ({ location }) => {
  it.effect("observations and recoveries land after a restart (the token sequence resumes above every stored token)", () => {
    const where = location()
    const fake = fakeRuntime()
    fake.states.set("s1", "running")
    fake.states.set("s2", "running")
    return Effect.gen(function* () {
      // First process: attach, observe three times, replace (the superseded record holds the highest token).
      yield* Effect.gen(function* () {
        const sessions = yield* AgentSessions
        yield* fake.register
        yield* sessions.attach(conv, { runtimeId: "fake", sessionId: "s1" })
        for (let i = 0; i < 3; i++) assert.isTrue((yield* sessions.inspect(conv)).applied)
        yield* sessions.attach(conv, { runtimeId: "fake", sessionId: "s2" })
      }).pipe(Effect.provide(sessionsOn(where.open())))

      // Second process.
      yield* Effect.gen(function* () {
        const sessions = yield* AgentSessions
        yield* fake.register
        const current = Option.getOrThrow(yield* sessions.current(conv))
        // What a counter restarted at zero would mint: refused by the compare-and-set.
        const store = yield* AttachmentStore
        yield* store.applyStatus(current.id, 2, statusOf("running"), 0)
        assert.isFalse(yield* store.applyStatus(current.id, 1, statusOf("idle"), 0))
        const observation = yield* sessions.inspect(conv)
        assert.isTrue(observation.applied)
        assert.strictEqual(observation.token, 4)
        fake.states.set("s2", "completed")
        assert.strictEqual(yield* sessions.recoverTurn(conv), "completed")
        const after = Option.getOrThrow(yield* sessions.current(conv))
        assert.strictEqual(after.observationToken, 5)
        assert.strictEqual(after.lastStatus?.state, "completed")
      }).pipe(Effect.provide(sessionsOn(where.open())))

      // Third process with no runtime registered: the attachment reads back as unknown_runtime, not an error.
      yield* Effect.gen(function* () {
        const sessions = yield* AgentSessions
        const observation = yield* sessions.inspect(conv)
        assert.deepStrictEqual([observation.status.state, observation.status.error?.code], ["unavailable", "unknown_runtime"])
        assert.include(observation.status.detail!, "Last reported state: completed")
        assert.isTrue(observation.applied)
        assert.strictEqual(observation.token, 6)
        assert.strictEqual(yield* sessions.recoverTurn(conv), "released")
      }).pipe(Effect.provide(sessionsOn(where.open())))
    })
  })
})
