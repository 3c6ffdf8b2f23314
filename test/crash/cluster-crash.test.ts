import { afterAll, assert, describe, it } from "@effect/vitest"
import { runCrashDrill } from "../../scripts/crash/driver.js"
import { scratchPostgres, stopPostgres } from "../support/db.js"
import { skipWithoutPostgres } from "../support/postgres.js"

/**
 * The crash drill with three hosts (`--hosts 3`): a cluster on one scratch Postgres whose hosts
 * are killed with -9 one at a time while messages stream in through whichever host is up. The
 * connection's shard moves whenever its holder dies. Nothing may be lost or duplicated.
 */
const skip = skipWithoutPostgres()
afterAll(() => stopPostgres())

describe.skipIf(skip)("crash safety of a cluster (kill -9 of real hosts on one Postgres)", () => {
  it("8 kills among three hosts, the connection's holder among them: every message answered by one completed turn, every reply sent once", { timeout: 900_000 }, async () => {
    const report = await runCrashDrill({
      kills: 8, maxKills: 30, require: ["holderKilled", "claimedNotFinished"], idempotent: true, seed: 17,
      hosts: 3, databaseUrl: scratchPostgres().createDatabase()
    })
    assert.deepStrictEqual(report.problems, [])
    // The holder of the connection was killed with turns running: its shard moved and they were rerun.
    assert.isAbove(report.windows.holderKilled, 0)
    assert.isAbove(report.windows.claimedNotFinished, 0)
    assert.strictEqual(report.deliveries.unknown ?? 0, 0)
    assert.isAbove(report.historyTurns, 0)
  })
})
