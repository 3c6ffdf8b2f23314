/** The typing indicator's loop (src/channels/typing.ts): renewed while it runs, never aborted mid-call. */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Duration, Effect, Fiber, TestClock } from "effect"
import { keepTyping, TYPING_CALL_TIMEOUT } from "../../src/channels/typing.js"

/** A typing call that counts its starts and ends and waits for `gate` (when given) before answering. */
const fakeCall = (gate?: Deferred.Deferred<void>) => {
  const counts = { started: 0, finished: 0, interrupted: 0 }
  const call = Effect.gen(function* () {
    counts.started += 1
    if (gate !== undefined) yield* Deferred.await(gate)
    counts.finished += 1
  }).pipe(Effect.onInterrupt(() => Effect.sync(() => void (counts.interrupted += 1))))
  return { counts, call }
}

describe("keepTyping", () => {
  it.effect("calls at once and again every interval while it runs", () =>
    Effect.gen(function* () {
      const { counts, call } = fakeCall()
      const fiber = yield* Effect.fork(keepTyping(call, Duration.seconds(8)))
      yield* TestClock.adjust(Duration.millis(1))
      assert.strictEqual(counts.started, 1)
      yield* TestClock.adjust(Duration.seconds(8))
      assert.strictEqual(counts.started, 2)
      yield* TestClock.adjust(Duration.seconds(16))
      assert.strictEqual(counts.started, 4)
      yield* Fiber.interrupt(fiber)
      yield* TestClock.adjust(Duration.seconds(60))
      assert.strictEqual(counts.started, 4)
    }))

  it.effect("stopping it lets the call in flight finish instead of aborting it, and none follows", () =>
    Effect.gen(function* () {
      const gate = yield* Deferred.make<void>()
      const { counts, call } = fakeCall(gate)
      const fiber = yield* Effect.fork(keepTyping(call, Duration.seconds(8)))
      yield* TestClock.adjust(Duration.millis(1))
      assert.strictEqual(counts.started, 1)
      // The turn ends while the first call is in flight: the interrupt waits for it.
      const stopping = yield* Effect.fork(Fiber.interrupt(fiber))
      yield* TestClock.adjust(Duration.millis(1))
      assert.isNull(stopping.unsafePoll())
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(stopping)
      assert.deepStrictEqual(counts, { started: 1, finished: 1, interrupted: 0 })
      yield* TestClock.adjust(Duration.seconds(60))
      assert.strictEqual(counts.started, 1)
    }))

  it.effect("a call that hangs is given up at its deadline, so stopping never waits longer", () =>
    Effect.gen(function* () {
      const { counts, call } = fakeCall(yield* Deferred.make<void>())
      const fiber = yield* Effect.fork(keepTyping(call, Duration.seconds(8)))
      yield* TestClock.adjust(Duration.millis(1))
      const stopping = yield* Effect.fork(Fiber.interrupt(fiber))
      yield* TestClock.adjust(TYPING_CALL_TIMEOUT)
      yield* Fiber.join(stopping)
      assert.deepStrictEqual(counts, { started: 1, finished: 0, interrupted: 1 })
    }))

  it.effect("a failing call is ignored and the indicator keeps renewing", () =>
    Effect.gen(function* () {
      let calls = 0
      const fiber = yield* Effect.fork(keepTyping(Effect.suspend(() => (calls += 1, Effect.fail("429"))), Duration.seconds(4)))
      yield* TestClock.adjust(Duration.seconds(8))
      assert.strictEqual(calls, 3)
      yield* Fiber.interrupt(fiber)
    }))
})
