import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Fiber, Layer, Option, TestClock } from "effect"
import { AgentSessionRuntimeRegistry } from "../../../src/runtimes/agent-session/AgentSessionRuntimeRegistry.js"
import { RuntimeDefinitionInvalid } from "../../../src/runtimes/agent-session/errors.js"
import type { CallOptions, SessionRef } from "../../../src/runtimes/agent-session/runtime.js"

const ref = (runtime = "rt", extra: Partial<SessionRef> = {}): SessionRef => ({ runtime, sessionId: "s1", ...extra })
const run = <A, E>(effect: Effect.Effect<A, E, AgentSessionRuntimeRegistry>) => Effect.provide(effect, AgentSessionRuntimeRegistry.layer)
const never = (opts: CallOptions) => new Promise((_resolve, reject) => opts.signal.addEventListener("abort", () => reject(new Error("aborted"))))

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
  it.effect("capabilities derive from the callbacks present; a missing one answers unsupported_operation", () =>
    run(Effect.gen(function* () {
      const registry = yield* AgentSessionRuntimeRegistry
      const a = yield* registry.register({ id: "a", provider: "p", inspect: () => ({ state: "idle" }) })
      const b = yield* registry.register({ id: "b", provider: "p", inspect: () => ({}), continue: () => ({}), detach: () => ({}) })
      const c = yield* registry.register({ id: "c" })
      assert.deepStrictEqual(a, { id: "a", provider: "p", capabilities: { inspect: true, continue: false, detach: false } })
      assert.deepStrictEqual(b.capabilities, { inspect: true, continue: true, detach: true })
      assert.deepStrictEqual(c, { id: "c", provider: "", capabilities: { inspect: false, continue: false, detach: false } })
      const s = yield* registry.continue(ref("a"), { prompt: "hi" })
      assert.deepStrictEqual([s.state, s.error?.code], ["unavailable", "unsupported_operation"])
      assert.strictEqual((yield* registry.inspect(ref("c"))).error?.code, "unsupported_operation")
    })))

  it.effect("a second registration of an id replaces the first (ClawConnect's rule); only a malformed id is refused", () =>
    run(Effect.gen(function* () {
      const registry = yield* AgentSessionRuntimeRegistry
      yield* registry.register({ id: "rt", provider: "first", inspect: () => ({ state: "running", detail: "first" }) })
      const again = registry.registrar.register({ id: "rt", provider: "second", inspect: () => ({ state: "idle", detail: "second" }) })
      assert.strictEqual(again.provider, "second")
      assert.strictEqual((yield* registry.inspect(ref())).detail, "second")
      assert.strictEqual(Option.getOrThrow(yield* registry.get("rt")).provider, "second")
      for (const id of ["", "-x", "a b", "x".repeat(65), 7, undefined]) {
        assert.instanceOf(thrownBy(() => registry.registrar.register({ id, inspect: () => null })), RuntimeDefinitionInvalid)
      }
      assert.instanceOf(yield* Effect.flip(registry.register(null)), RuntimeDefinitionInvalid)
      assert.strictEqual(thrownBy(() => registry.registrar.register({ id: "x".repeat(64) })), undefined)
      assert.deepStrictEqual((yield* registry.runtimes).map((r) => r.id), ["rt", "x".repeat(64)])
    })))

  it.effect("a hung callback is <op>_timeout at the deadline (Effect.timeout), its signal aborted, the last known state in the detail", () =>
    run(Effect.gen(function* () {
      const registry = yield* AgentSessionRuntimeRegistry
      const signals: Array<AbortSignal> = []
      const hang = (o: CallOptions) => (signals.push(o.signal), never(o))
      yield* registry.register({
        id: "rt",
        inspect: (_r: SessionRef, o: CallOptions) => hang(o),
        continue: (_r: SessionRef, _q: unknown, o: CallOptions) => hang(o),
        detach: (_r: SessionRef, _q: unknown, o: CallOptions) => hang(o)
      })
      const known = ref("rt", { lastKnownState: "needs_input" })
      const fibers = yield* Effect.all([
        Effect.fork(registry.inspect(known)),
        Effect.fork(registry.continue(known, { prompt: "x" })),
        Effect.fork(registry.detach(known, { reason: "r" }))
      ])
      yield* TestClock.adjust("59999 millis")
      assert.isTrue(signals.length === 3 && signals.every((s) => !s.aborted))
      yield* TestClock.adjust("1 millis")
      const statuses = yield* Effect.forEach(fibers, Fiber.join)
      assert.deepStrictEqual(statuses.map((s) => [s.state, s.error?.code]), [
        ["unavailable", "inspect_timeout"],
        ["unavailable", "continue_timeout"],
        ["unavailable", "detach_timeout"]
      ])
      assert.isTrue(statuses.every((s) => s.detail!.includes("Last reported state: needs_input")))
      assert.isTrue(signals.every((s) => s.aborted))
    })))

  it.effect("opts.timeoutMs overrides the deadline for one call; AGENT_SESSION_CALL_TIMEOUT_MS sets the default; opts.now is the Clock's", () =>
    Effect.gen(function* () {
      const registry = yield* AgentSessionRuntimeRegistry
      assert.strictEqual(registry.callTimeoutMs, 5_000)
      const seen: Array<[number | undefined, number]> = []
      yield* registry.register({ id: "rt", inspect: (_r: SessionRef, o: CallOptions) => (seen.push([o.timeoutMs, o.now]), never(o)) })
      yield* TestClock.adjust("7 millis")
      const byDefault = yield* Effect.fork(registry.inspect(ref()))
      const short = yield* Effect.fork(registry.inspect(ref(), { timeoutMs: 100 }))
      yield* TestClock.adjust("100 millis")
      assert.strictEqual((yield* Fiber.join(short)).error?.code, "inspect_timeout")
      assert.isTrue(Option.isNone(yield* Fiber.poll(byDefault)))
      yield* TestClock.adjust("4900 millis")
      const late = yield* Fiber.join(byDefault)
      assert.deepStrictEqual([late.error?.code, late.reconciledAt], ["inspect_timeout", 7])
      assert.deepStrictEqual(seen, [[5_000, 7], [100, 7]])
    }).pipe(
      Effect.provide(AgentSessionRuntimeRegistry.layer.pipe(
        Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["AGENT_SESSION_CALL_TIMEOUT_MS", "5000"]]))))
      ))
    ))

  it.effect("a callback that ignores its signal and never settles still ends at the deadline (its signal, read later, is aborted); interrupting a call aborts its signal", () =>
    run(Effect.gen(function* () {
      const registry = yield* AgentSessionRuntimeRegistry
      const signals: Array<AbortSignal> = []
      // The signal is made when first read: one first read after the deadline comes aborted.
      let late: CallOptions | undefined
      yield* registry.register({ id: "deaf", inspect: (_r: SessionRef, o: CallOptions) => ((late = o), new Promise(() => {})) })
      yield* registry.register({ id: "rt", inspect: (_r: SessionRef, o: CallOptions) => (signals.push(o.signal), never(o)) })
      const deaf = yield* Effect.fork(registry.inspect(ref("deaf"), { timeoutMs: 10 }))
      yield* TestClock.adjust("10 millis")
      assert.strictEqual((yield* Fiber.join(deaf)).error?.code, "inspect_timeout")
      assert.isTrue(late!.signal.aborted)
      assert.strictEqual(late!.signal, late!.signal)
      const fiber = yield* Effect.fork(registry.inspect(ref()))
      yield* TestClock.adjust("1 millis")
      yield* Fiber.interrupt(fiber)
      assert.isTrue(signals[0]!.aborted)
    })))

  it.effect("throwing and rejecting callbacks are <op>_failed; a getter that throws inside an answer too; an unregistered runtime is unknown_runtime", () =>
    run(Effect.gen(function* () {
      const registry = yield* AgentSessionRuntimeRegistry
      yield* registry.register({ id: "throws", inspect: () => { throw new Error("boom") } })
      yield* registry.register({ id: "rejects", inspect: () => Promise.reject(new TypeError("nope")) })
      yield* registry.register({ id: "getter", inspect: () => ({ get state(): string { throw new Error("trap") } }) })
      const thrown = yield* registry.inspect(ref("throws"))
      assert.deepStrictEqual([thrown.state, thrown.error?.code], ["unavailable", "inspect_failed"])
      assert.include(thrown.error!.message, "boom")
      assert.include((yield* registry.inspect(ref("rejects"))).error!.message, "TypeError")
      assert.strictEqual((yield* registry.inspect(ref("getter"))).error?.code, "inspect_failed")
      const nobody = yield* registry.inspect(ref("nobody"))
      assert.deepStrictEqual([nobody.state, nobody.error?.code, nobody.runtime, nobody.sessionId], ["unavailable", "unknown_runtime", "nobody", "s1"])
    })))

  it.effect("callbacks get a frozen copy of the ref (provider bound to the runtime's) and { prompt } / { reason }; methods keep `this`", () =>
    run(Effect.gen(function* () {
      const registry = yield* AgentSessionRuntimeRegistry
      const seen: Array<unknown> = []
      yield* registry.register({
        id: "rt",
        provider: "real",
        greeting: "echo",
        inspect: () => null,
        continue(this: { greeting: string }, r: SessionRef, q: { prompt?: string }) {
          seen.push(r, q, Object.isFrozen(r), Object.isFrozen(q))
          return { state: "idle", finalResponse: `${this.greeting} ${q.prompt}` }
        },
        detach: (_r: SessionRef, q: { reason?: string }) => (seen.push(q), { state: "dead" })
      })
      const s = yield* registry.continue(ref("rt", { provider: "claimed", metadata: { k: "v" } }), { prompt: "hello" })
      assert.deepStrictEqual([s.finalResponse, s.provider], ["echo hello", "real"])
      yield* registry.detach(ref(), { reason: "done" })
      assert.deepStrictEqual(seen, [{ runtime: "rt", sessionId: "s1", provider: "real", metadata: { k: "v" } }, { prompt: "hello" }, true, true, { reason: "done" }])
    })))
})
