import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Exit, Fiber, Layer, Option, TestClock } from "effect"
import { AgentSessionRuntimeRegistry } from "../../../src/runtimes/agent-session/AgentSessionRuntimeRegistry.js"
import { DuplicateRuntime, RuntimeDefinitionInvalid } from "../../../src/runtimes/agent-session/errors.js"
import type { CallOptions, SessionRef } from "../../../src/runtimes/agent-session/runtime.js"

const ref = (runtimeId = "rt"): SessionRef => ({ runtimeId, provider: "p", sessionRef: "s1" })
const run = <A, E>(effect: Effect.Effect<A, E, AgentSessionRuntimeRegistry>) => Effect.provide(effect, AgentSessionRuntimeRegistry.layer)
const never = (_: SessionRef, opts: CallOptions) => new Promise((_resolve, reject) => opts.signal.addEventListener("abort", () => reject(new Error("aborted"))))

/** What a plain (non-Effect) call throws; undefined when it returns. */
const thrownBy = (f: () => unknown): unknown => {
  try {
    f()
    return undefined
  } catch (e) {
    return e
  }
}

describe("AgentSessionRuntimeRegistry", () => {
  it.effect("capabilities derive from the callbacks supplied", () =>
    run(Effect.gen(function* () {
      const registry = yield* AgentSessionRuntimeRegistry
      const a = yield* registry.register({ id: "a", provider: "p", inspect: () => ({ state: "idle" }) })
      const b = yield* registry.register({ id: "b", provider: "p", inspect: () => ({ state: "idle" }), continue: () => ({ state: "running" }), detach: () => undefined })
      assert.deepStrictEqual(a, { inspect: true, continue: false, detach: false })
      assert.deepStrictEqual(b, { inspect: true, continue: true, detach: true })
      assert.deepStrictEqual((yield* registry.runtimes).map((r) => r.id), ["a", "b"])
      // No continue registered: an answer, not an error.
      const s = yield* registry.continue(ref("a"), { text: "hi" })
      assert.strictEqual(s.state, "unavailable")
      assert.strictEqual(s.code, "continue_unsupported")
    })))

  it.effect("a duplicate id is refused with a typed error and the earlier registration stays", () =>
    run(Effect.gen(function* () {
      const registry = yield* AgentSessionRuntimeRegistry
      yield* registry.register({ id: "rt", provider: "first", inspect: () => ({ state: "running", detail: "first" }) })
      const again = yield* Effect.flip(registry.register({ id: "rt", provider: "second", inspect: () => ({ state: "idle", detail: "second" }) }))
      assert.instanceOf(again, DuplicateRuntime)
      assert.strictEqual(again.existingProvider, "first")
      assert.strictEqual((yield* registry.inspect(ref())).detail, "first")
      // The module-facing registrar throws the same typed error.
      assert.instanceOf(thrownBy(() => registry.registrar.register({ id: "rt", provider: "third", inspect: () => ({ state: "idle" }) })), DuplicateRuntime)
      assert.strictEqual(Option.getOrThrow(yield* registry.get("rt")).provider, "first")
    })))

  it.effect("a malformed registration is refused with every problem named", () =>
    run(Effect.gen(function* () {
      const registry = yield* AgentSessionRuntimeRegistry
      const e = yield* Effect.flip(registry.register({ id: "", provider: 3, continue: "no" }))
      assert.instanceOf(e, RuntimeDefinitionInvalid)
      const paths = e.problems.map((p) => p.path).sort()
      assert.deepStrictEqual(paths, ["continue", "id", "inspect", "provider"])
      assert.instanceOf(yield* Effect.flip(registry.register(null)), RuntimeDefinitionInvalid)
      assert.strictEqual((yield* registry.runtimes).length, 0)
    })))

  it.effect("a callback that never answers becomes <op>_timeout at the default deadline, and its signal is aborted", () =>
    run(Effect.gen(function* () {
      const registry = yield* AgentSessionRuntimeRegistry
      const signals: Array<AbortSignal> = []
      const hang = (opts: CallOptions) => {
        signals.push(opts.signal)
        assert.strictEqual(opts.timeoutMs, 60_000)
        return never(ref(), opts)
      }
      yield* registry.register({ id: "rt", provider: "p", inspect: (_r: SessionRef, o: CallOptions) => hang(o), continue: (_r: SessionRef, _q: unknown, o: CallOptions) => hang(o), detach: (_r: SessionRef, o: CallOptions) => hang(o) })
      const fibers = yield* Effect.all([
        Effect.fork(registry.inspect(ref())),
        Effect.fork(registry.continue(ref(), { text: "x", turnId: 1 })),
        Effect.fork(registry.detach(ref()))
      ])
      yield* TestClock.adjust("59999 millis")
      assert.isTrue(signals.every((s) => !s.aborted))
      yield* TestClock.adjust("1 millis")
      const statuses = yield* Effect.forEach(fibers, Fiber.join)
      assert.deepStrictEqual(statuses.map((s) => [s.state, s.code]), [
        ["unavailable", "inspect_timeout"],
        ["unavailable", "continue_timeout"],
        ["unavailable", "detach_timeout"]
      ])
      assert.strictEqual(signals.length, 3)
      assert.isTrue(signals.every((s) => s.aborted))
    })))

  it.effect("opts.timeoutMs overrides the deadline for one call; AGENT_SESSION_CALL_TIMEOUT_MS sets the default", () =>
    Effect.gen(function* () {
      const registry = yield* AgentSessionRuntimeRegistry
      assert.strictEqual(registry.callTimeoutMs, 5_000)
      const seen: Array<number> = []
      yield* registry.register({ id: "rt", provider: "p", inspect: (r: SessionRef, o: CallOptions) => (seen.push(o.timeoutMs), never(r, o)) })
      // The later deadline first: the earlier one registered after it must still fire first.
      const byDefault = yield* Effect.fork(registry.inspect(ref()))
      const short = yield* Effect.fork(registry.inspect(ref(), { timeoutMs: 100 }))
      yield* TestClock.adjust("100 millis")
      assert.strictEqual((yield* Fiber.join(short)).code, "inspect_timeout")
      assert.isTrue(Option.isNone(yield* Fiber.poll(byDefault)))
      yield* TestClock.adjust("4900 millis")
      assert.strictEqual((yield* Fiber.join(byDefault)).code, "inspect_timeout")
      assert.deepStrictEqual(seen, [5_000, 100])
    }).pipe(
      Effect.provide(AgentSessionRuntimeRegistry.layer.pipe(
        Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["AGENT_SESSION_CALL_TIMEOUT_MS", "5000"]]))))
      ))
    ))

  it.effect("a callback that ignores its signal and never settles still ends at the deadline", () =>
    run(Effect.gen(function* () {
      const registry = yield* AgentSessionRuntimeRegistry
      yield* registry.register({ id: "rt", provider: "p", inspect: () => new Promise(() => {}) })
      const fiber = yield* Effect.fork(registry.inspect(ref(), { timeoutMs: 10 }))
      yield* TestClock.adjust("10 millis")
      const status = yield* Fiber.join(fiber)
      assert.deepStrictEqual([status.state, status.code], ["unavailable", "inspect_timeout"])
    })))

  it.effect("thousands of settled calls leave no stale deadlines behind; a later hung call still times out", () =>
    run(Effect.gen(function* () {
      const registry = yield* AgentSessionRuntimeRegistry
      let hang = false
      yield* registry.register({ id: "rt", provider: "p", inspect: () => (hang ? new Promise(() => {}) : { state: "idle" }) })
      for (let i = 0; i < 3_000; i++) assert.strictEqual((yield* registry.inspect(ref())).state, "idle")
      hang = true
      const fiber = yield* Effect.fork(registry.inspect(ref(), { timeoutMs: 10 }))
      yield* TestClock.adjust("10 millis")
      assert.strictEqual((yield* Fiber.join(fiber)).code, "inspect_timeout")
    })))

  it.effect("interrupting a call aborts its signal", () =>
    run(Effect.gen(function* () {
      const registry = yield* AgentSessionRuntimeRegistry
      const signals: Array<AbortSignal> = []
      yield* registry.register({ id: "rt", provider: "p", inspect: (r: SessionRef, o: CallOptions) => (signals.push(o.signal), never(r, o)) })
      const fiber = yield* Effect.fork(registry.inspect(ref()))
      yield* TestClock.adjust("1 millis")
      yield* Fiber.interrupt(fiber)
      assert.isTrue(signals[0]!.aborted)
    })))

  it.effect("throwing, rejecting and malformed callbacks are unavailable with their own codes", () =>
    run(Effect.gen(function* () {
      const registry = yield* AgentSessionRuntimeRegistry
      yield* registry.register({ id: "throws", provider: "p", inspect: () => { throw new Error("boom") } })
      yield* registry.register({ id: "rejects", provider: "p", inspect: () => Promise.reject(new TypeError("nope")), continue: async () => 42 })
      yield* registry.register({ id: "malformed", provider: "p", inspect: () => ({ state: "sleeping" }), detach: async () => ({ state: "idle", code: 7 }) })
      const thrown = yield* registry.inspect(ref("throws"))
      assert.deepStrictEqual([thrown.state, thrown.code], ["unavailable", "inspect_failed"])
      assert.include(thrown.detail!, "boom")
      const rejected = yield* registry.inspect(ref("rejects"))
      assert.deepStrictEqual([rejected.state, rejected.code], ["unavailable", "inspect_failed"])
      assert.include(rejected.detail!, "TypeError")
      const notStatus = yield* registry.continue(ref("rejects"), { text: "x" })
      assert.deepStrictEqual([notStatus.state, notStatus.code], ["unavailable", "continue_malformed"])
      const badState = yield* registry.inspect(ref("malformed"))
      assert.deepStrictEqual([badState.state, badState.code], ["unavailable", "inspect_malformed"])
      assert.include(badState.detail!, "state")
      const badCode = yield* registry.detach(ref("malformed"))
      assert.deepStrictEqual([badCode.state, badCode.code], ["unavailable", "detach_malformed"])
    })))

  it.effect("an unregistered runtime answers unknown_runtime; detach may answer nothing", () =>
    run(Effect.gen(function* () {
      const registry = yield* AgentSessionRuntimeRegistry
      const s = yield* registry.inspect(ref("nobody"))
      assert.deepStrictEqual([s.state, s.code], ["unknown", "unknown_runtime"])
      yield* registry.register({ id: "rt", provider: "p", inspect: () => ({ state: "idle" }), detach: () => undefined })
      const d = yield* registry.detach(ref())
      assert.deepStrictEqual([d.state, d.code], ["idle", "detached"])
    })))

  it.effect("callbacks receive the session ref and the request, frozen", () =>
    run(Effect.gen(function* () {
      const registry = yield* AgentSessionRuntimeRegistry
      const seen: Array<unknown> = []
      yield* registry.register({
        id: "rt",
        provider: "p",
        inspect: () => ({ state: "idle" }),
        continue: (r: SessionRef, q: { text: string; turnId?: number }) => {
          seen.push(r, q, Object.isFrozen(r))
          return { state: "idle", output: `echo ${q.text}` }
        }
      })
      const s = yield* registry.continue(ref(), { text: "hello", turnId: 9 })
      assert.strictEqual(s.output, "echo hello")
      assert.deepStrictEqual(seen, [{ runtimeId: "rt", provider: "p", sessionRef: "s1" }, { text: "hello", turnId: 9 }, true])
      const exit = yield* Effect.exit(registry.inspect(ref()))
      assert.isTrue(Exit.isSuccess(exit))
    })))
})
