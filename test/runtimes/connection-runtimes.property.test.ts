import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import { PublicUrl } from "../../src/contracts/public-url.js"
import { EventBus } from "../../src/events/EventBus.js"
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Fiber, FastCheck as fc, Layer, Logger, LogLevel, Option, TestClock } from "effect"
import { HostConfig } from "../../src/config/HostConfig.js"
import * as Database from "../../src/db/Database.js"
import * as Stores from "../../src/db/Stores.js"
import { connectionRuntimesLayer, Dispatched, RecoveredTurns } from "../../src/host/startup-steps.js"
import type { ConnectionRuntime } from "../../src/contracts/connection-runtime.js"
import { ConnectionRuntimes, ConnectionRuntimeSources, RuntimeContexts } from "../../src/runtimes/ConnectionRuntimes.js"
import { tempDir } from "../support/db.js"
import { recordingConfig } from "../support/host.js"

type Start = "ok" | "throw" | "hang"
type Close = "ok" | "throw" | "hang"
interface Spec {
  readonly start: Start
  /** isReady answers true from this call on; null: never. */
  readonly readyAfter: number | null
  readonly close: Close
}

const specArb: fc.Arbitrary<Spec> = fc.record({
  start: fc.constantFrom<Start>("ok", "ok", "ok", "throw", "hang"),
  readyAfter: fc.oneof(fc.integer({ min: 0, max: 3 }), fc.constant(null), fc.integer({ min: 0, max: 1 })),
  close: fc.constantFrom<Close>("ok", "ok", "throw", "hang")
})

const runtimeFor = (i: number, spec: Spec, log: Array<string>): ConnectionRuntime => {
  let polls = 0
  let readyLogged = false
  return {
    name: `rt${i}`,
    start: () => {
      log.push(`start:${i}`)
      if (spec.start === "throw") return Promise.reject(new Error(`boom ${i}`))
      if (spec.start === "hang") return new Promise(() => {})
      return Promise.resolve()
    },
    isReady: () => {
      const ready = spec.readyAfter !== null && polls++ >= spec.readyAfter
      if (ready && !readyLogged) {
        readyLogged = true
        log.push(`ready:${i}`)
      }
      return ready
    },
    close: () => {
      log.push(`close:${i}`)
      if (spec.close === "throw") return Promise.reject(new Error(`close boom ${i}`))
      if (spec.close === "hang") return new Promise(() => {})
      return Promise.resolve()
    }
  }
}

const underTest = (specs: ReadonlyArray<Spec>, log: Array<string>) => {
  const config = HostConfig.layerFrom(recordingConfig(tempDir(), { runtimeTimeoutsMs: { start: 1_000, ready: 200, close: 1_000, check: 1_000 } }))
  const base = Layer.mergeAll(
    Layer.provideMerge(Stores.layer, Database.layerMemory),
    EventBus.layer,
    FetchHttpClient.layer,
    PublicUrl.layerNone,
    Layer.succeed(ConnectionRuntimeSources, specs.map((s, i) => ({ plugin: `plugin${i % 2}`, value: runtimeFor(i, s, log) }))),
    Layer.succeed(RuntimeContexts, { make: () => Effect.succeed({ context: {} as never, release: Effect.void }) }),
    Layer.effect(RecoveredTurns, Effect.sync(() => {
      log.push("released")
      return { survivors: [] }
    }))
  )
  const dispatch = Layer.effect(Dispatched, Effect.gen(function* () {
    yield* ConnectionRuntimes
    log.push("dispatch")
    return { conversations: 0 }
  }))
  return dispatch.pipe(Layer.provideMerge(connectionRuntimesLayer), Layer.provideMerge(base), Layer.provide(config), Layer.provide(Logger.minimumLogLevel(LogLevel.None)))
}

/** Runs startup then shutdown, driving the test clock so deadlines fire without real waiting. */
const startAndStop = (specs: ReadonlyArray<Spec>, log: Array<string>) =>
  Effect.gen(function* () {
    const fiber = yield* Effect.fork(Effect.exit(Effect.scoped(Effect.asVoid(Layer.build(underTest(specs, log))))))
    for (let i = 0; i < 200; i++) {
      const done = yield* Fiber.poll(fiber)
      if (done._tag === "Some") break
      yield* Effect.promise(() => new Promise<void>((r) => setImmediate(r)))
      yield* TestClock.adjust("500 millis")
    }
    return yield* Fiber.join(fiber)
  })

describe("connection runtimes: ordered start, reverse unwind (property)", () => {
  it.effect.prop("start order, the closed set and its order, close failures, and dispatch only after all ready", [fc.array(specArb, { maxLength: 6 })], ([specs]) =>
    Effect.gen(function* () {
      const log: Array<string> = []
      const exit = yield* startAndStop(specs, log)
      const failing = specs.findIndex((s) => s.start !== "ok" || s.readyAfter === null)
      const starts = log.filter((l) => l.startsWith("start:")).map((l) => Number(l.slice(6)))
      const closes = log.filter((l) => l.startsWith("close:")).map((l) => Number(l.slice(6)))
      // Claims were released before the first start.
      assert.strictEqual(log[0], "released")
      if (failing === -1) {
        assert.isTrue(Exit.isSuccess(exit))
        assert.deepStrictEqual(starts, specs.map((_, i) => i))
        assert.deepStrictEqual(closes, specs.map((_, i) => i).reverse())
        // Dispatch came after every runtime reported ready.
        const dispatchAt = log.indexOf("dispatch")
        assert.isAbove(dispatchAt, -1)
        for (let i = 0; i < specs.length; i++) assert.isBelow(log.indexOf(`ready:${i}`), dispatchAt)
        return
      }
      assert.isTrue(Exit.isFailure(exit))
      assert.notInclude(log, "dispatch")
      // Nothing started after the failure; k and everything before it closed in exact reverse.
      assert.deepStrictEqual(starts, Array.from({ length: failing + 1 }, (_, i) => i))
      assert.deepStrictEqual(closes, Array.from({ length: failing + 1 }, (_, i) => failing - i))
      const failure = Exit.isFailure(exit) ? Option.getOrNull(Cause.failureOption(exit.cause)) : null
      assert.strictEqual(failure?._tag, "RuntimeStartFailed")
      if (failure?._tag === "RuntimeStartFailed") {
        const s = specs[failing]!
        assert.strictEqual(failure.runtime, `rt${failing}`)
        assert.strictEqual(failure.code, s.start === "throw" ? "start_failed" : s.start === "hang" ? "start_timeout" : "ready_timeout")
        assert.deepStrictEqual(failure.closed, closes.map((i) => `rt${i}`))
        const expected = closes.filter((i) => specs[i]!.close !== "ok").map((i) => [`rt${i}`, specs[i]!.close === "throw" ? "close_failed" : "close_timeout"])
        assert.deepStrictEqual(failure.closeFailures.map((f) => [f.runtime, f.code]), expected)
      }
    }), { fastCheck: { numRuns: 100 } })
})
