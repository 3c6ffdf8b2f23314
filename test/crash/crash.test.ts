import { assert, describe, it } from "@effect/vitest"
import { runCrashDrill } from "../../scripts/crash/driver.js"
import { skipWithout } from "../support/system.js"

/**
 * Real processes, real SIGKILL: the host is killed at random points while messages stream in,
 * restarted, and finally left to finish. Nothing may be lost or duplicated.
 */
describe("crash safety (kill -9 of a real host process)", () => {
  it("50 kills, idempotent channel: every message handled by one completed turn, every reply sent exactly once", { timeout: 900_000 }, async () => {
    // "Written, not called" lies between a reply's commit and its send in one fiber: here it was hit
    // 0 times in 250 kills (and 0 in 30 at the first session's commit), so it is reported, not
    // required; the windows that kills do land in are required.
    const report = await runCrashDrill({ kills: 50, maxKills: 150, require: ["claimedNotFinished", "calledNotMarked"], idempotent: true, seed: 7 })
    assert.deepStrictEqual(report.problems, [])
    assert.isAbove(report.messages, 100)
    // The kills landed inside each required crash window at least once, so its recovery path was taken.
    assert.isAbove(report.windows.claimedNotFinished, 0)
    assert.isAbove(report.windows.calledNotMarked, 0)
    assert.strictEqual(report.deliveries.unknown ?? 0, 0)
    // The history later turns were built from: no user message lost, no reply repeated.
    assert.isAbove(report.historyTurns, 0)
  })

  it("20 kills, channel without idempotent resends: ambiguous sends end unknown and are never resent", { timeout: 900_000 }, async () => {
    const report = await runCrashDrill({ kills: 20, maxKills: 200, require: ["calledNotMarked"], idempotent: false, seed: 11 })
    assert.deepStrictEqual(report.problems, [])
    assert.isAbove(report.windows.calledNotMarked, 0)
    assert.isAbove(report.deliveries.unknown ?? 0, 0)
  })

  it("12 kills with an every-second schedule: no run is left queued behind a finished turn, every run delivered by the turn that answered it", { timeout: 900_000 }, async () => {
    const report = await runCrashDrill({ kills: 12, maxKills: 60, require: ["scheduledRunOpen"], idempotent: true, schedule: true, seed: 13 })
    assert.deepStrictEqual(report.problems, [])
    // Kills landed while a scheduled run was open (fired, its turn not ended): its recovery was taken.
    assert.isAbove(report.windows.scheduledRunOpen, 0)
  })

  it.skipIf(skipWithout("bwrap", "apt-get install bubblewrap"))(
    "15 kills with turns in real bwrap sandboxes and hostile leftovers at each restart: nothing lost or duplicated, no bystander killed, no setuid file kept",
    { timeout: 900_000 },
    async () => {
      const report = await runCrashDrill({ kills: 15, maxKills: 40, require: ["claimedNotFinished"], idempotent: true, sandbox: true, seed: 5 })
      assert.deepStrictEqual(report.problems, [])
      assert.isAbove(report.windows.claimedNotFinished, 0)
    }
  )
})
