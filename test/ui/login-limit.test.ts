/**
 * The Control UI's limit on failed logins, in time given explicitly (the server passes the
 * Clock's): a sliding window per client and overall, the wait until the oldest counted failure
 * leaves it, and successes neither counted nor resetting anyone.
 */
import { assert, describe, it } from "@effect/vitest"
import { LoginLimiter } from "../../src/ui/login-limit.js"

const WINDOW = 60_000
const wrong = () => undefined
const right = () => "digest"

describe("Control UI login limiter", () => {
  it("a client's failures: the limit, the wait until the oldest leaves the window, then one more try", () => {
    const limiter = new LoginLimiter({ perClient: 3, overall: 100, windowMs: WINDOW })
    for (const t of [0, 1_000, 2_000]) assert.strictEqual(limiter.attempt("a", t, wrong)._tag, "Refused")
    assert.deepStrictEqual(limiter.attempt("a", 10_000, right), { _tag: "Limited", waitMs: 50_000, scope: "client" })
    assert.deepStrictEqual(limiter.attempt("a", 59_999, wrong), { _tag: "Limited", waitMs: 1, scope: "client" })
    // The failure at 0 has left the window: one more try, which (failing) limits again until 1 000 leaves.
    assert.strictEqual(limiter.attempt("a", 60_000, wrong)._tag, "Refused")
    assert.deepStrictEqual(limiter.attempt("a", 60_500, right), { _tag: "Limited", waitMs: 500, scope: "client" })
    assert.deepStrictEqual(limiter.attempt("b", 60_500, right), { _tag: "Accepted", tokenHash: "digest" })
  })

  it("overall: failures from many clients limit everyone; successes are not counted and reset nothing", () => {
    const limiter = new LoginLimiter({ perClient: 2, overall: 4, windowMs: WINDOW })
    assert.strictEqual(limiter.attempt("a", 0, wrong)._tag, "Refused")
    assert.strictEqual(limiter.attempt("b", 0, right)._tag, "Accepted")
    assert.strictEqual(limiter.attempt("a", 100, wrong)._tag, "Refused")
    assert.deepStrictEqual(limiter.attempt("a", 200, right), { _tag: "Limited", waitMs: WINDOW - 200, scope: "client" })
    for (const client of ["c", "d"]) assert.strictEqual(limiter.attempt(client, 300, wrong)._tag, "Refused")
    assert.deepStrictEqual(limiter.attempt("e", 400, right), { _tag: "Limited", waitMs: WINDOW - 400, scope: "overall" })
    assert.strictEqual(limiter.attempt("e", WINDOW, right)._tag, "Accepted")
  })

  it("keeps only failures inside the window", () => {
    const limiter = new LoginLimiter({ perClient: 5, overall: 50, windowMs: WINDOW })
    for (let i = 0; i < 1_000; i++) limiter.attempt(`client-${i}`, i * WINDOW, wrong)
    const kept = limiter as unknown as { byClient: Map<string, unknown>; all: Array<number> }
    assert.strictEqual(kept.byClient.size, 1)
    assert.strictEqual(kept.all.length, 1)
  })
})
