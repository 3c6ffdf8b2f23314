import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit } from "effect"
import { eventually, EventuallyTimedOut } from "./eventually.js"

describe("eventually", () => {
  it.effect("returns the probe's first value, on real timers even under a TestClock", () =>
    Effect.gen(function* () {
      let tries = 0
      const value = yield* eventually(() => (++tries === 3 ? "there" : undefined), { label: "the third try" })
      assert.strictEqual(value, "there")
      assert.strictEqual(tries, 3)
      const fromEffect = yield* eventually(Effect.sync(() => 7), { label: "an effect" })
      assert.strictEqual(fromEffect, 7)
      const fromPromise = yield* eventually(async () => "async", { label: "a promise" })
      assert.strictEqual(fromPromise, "async")
    }))

  it.effect("gives up naming what it waited for and what the probe last threw", () =>
    Effect.gen(function* () {
      const exit = yield* Effect.exit(eventually(() => {
        throw new Error("connection refused")
      }, { label: "the server's answer", timeout: "20 millis" }))
      assert.isTrue(Exit.isFailure(exit))
      const defect = Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
      assert.instanceOf(defect, EventuallyTimedOut)
      assert.match((defect as Error).message, /^gave up after 20ms waiting for the server's answer \(the probe last threw: connection refused\)$/)
    }))

  it.effect("the probe's typed failure is the wait's failure", () =>
    Effect.gen(function* () {
      assert.strictEqual(yield* Effect.flip(eventually(Effect.fail("boom" as const), { label: "never" })), "boom")
    }))
})
