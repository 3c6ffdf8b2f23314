import { assert, describe, it } from "@effect/vitest"
import { Either } from "effect"
import { decodeConfig } from "../../src/config/HostConfig.js"
import { latestDue, nextDue, parseCron, parseWindow, type Recurrence, shortestGapMs } from "../../src/domain/due.js"

const cron = (expr: string, zone = "UTC"): Recurrence => ({ _tag: "Cron", cron: Either.getOrThrow(parseCron(expr, zone)) })
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())
const t = (s: string) => new Date(s).getTime()

describe("schedule math", () => {
  it("every field form: lists, ranges, steps, names, day-of-week", () => {
    assert.strictEqual(iso(nextDue(cron("0 8 * * *"), t("2026-01-01T08:00:00Z"))), "2026-01-02T08:00:00.000Z")
    assert.strictEqual(iso(nextDue(cron("15,45 * * * *"), t("2026-01-01T10:20:00Z"))), "2026-01-01T10:45:00.000Z")
    assert.strictEqual(iso(nextDue(cron("0 9-17/4 * * *"), t("2026-01-01T09:00:00Z"))), "2026-01-01T13:00:00.000Z")
    assert.strictEqual(iso(nextDue(cron("0 0 1 */3 *"), t("2026-01-15T00:00:00Z"))), "2026-04-01T00:00:00.000Z")
    // 2026-01-01 is a Thursday: the next Monday 07:30.
    assert.strictEqual(iso(nextDue(cron("30 7 * * MON"), t("2026-01-01T00:00:00Z"))), "2026-01-05T07:30:00.000Z")
    assert.strictEqual(iso(nextDue(cron("0 12 * JAN,JUL 1-5"), t("2026-02-01T00:00:00Z"))), "2026-07-01T12:00:00.000Z")
  })

  it("6 fields: seconds first", () => {
    assert.strictEqual(iso(nextDue(cron("*/2 * * * * *"), t("2026-01-01T00:00:00Z"))), "2026-01-01T00:00:02.000Z")
    assert.strictEqual(iso(nextDue(cron("*/2 * * * * *"), t("2026-01-01T00:00:01.500Z"))), "2026-01-01T00:00:02.000Z")
    assert.strictEqual(iso(nextDue(cron("30 0 8 * * *"), t("2026-01-01T08:00:00Z"))), "2026-01-01T08:00:30.000Z")
    assert.strictEqual(iso(latestDue(cron("*/2 * * * * *"), t("2026-01-01T00:00:00Z"), t("2026-01-01T00:00:09Z"))), "2026-01-01T00:00:08.000Z")
    assert.strictEqual(iso(latestDue(cron("*/2 * * * * *"), t("2026-01-01T00:00:00Z"), t("2026-01-01T00:00:08Z"))), "2026-01-01T00:00:08.000Z")
  })

  it("DST in Europe/Berlin: the skipped 02:30 runs after the gap, the repeated 02:30 runs once", () => {
    const daily = cron("30 2 * * *", "Europe/Berlin")
    // 29 March 2026: 02:00 CET jumps to 03:00 CEST; 02:30 does not exist and the run moves to 03:30 CEST.
    assert.strictEqual(iso(nextDue(daily, t("2026-03-28T12:00:00Z"))), "2026-03-29T01:30:00.000Z")
    // 25 October 2026: 03:00 CEST falls back to 02:00 CET; 02:30 happens twice and runs at the first.
    const first = nextDue(daily, t("2026-10-24T12:00:00Z"))!
    assert.strictEqual(iso(first), "2026-10-25T00:30:00.000Z")
    assert.strictEqual(iso(nextDue(daily, first)), "2026-10-26T01:30:00.000Z")
    // 8:00 local is 07:00Z in winter and 06:00Z in summer.
    const morning = cron("0 8 * * *", "Europe/Berlin")
    assert.strictEqual(iso(nextDue(morning, t("2026-03-28T12:00:00Z"))), "2026-03-29T06:00:00.000Z")
    assert.strictEqual(iso(nextDue(morning, t("2026-03-27T12:00:00Z"))), "2026-03-28T07:00:00.000Z")
  })

  it("intervals and one-shots", () => {
    const every = { _tag: "Every", anchor: 1_000, everyMs: 300_000 } as const
    assert.strictEqual(nextDue(every, 0), 1_000)
    assert.strictEqual(nextDue(every, 1_000), 301_000)
    assert.strictEqual(latestDue(every, 1_000, 900_000), 601_000)
    assert.strictEqual(nextDue({ _tag: "Once", at: 5 }, 4), 5)
    assert.strictEqual(nextDue({ _tag: "Once", at: 5 }, 5), null)
    assert.strictEqual(shortestGapMs(cron("*/2 * * * * *"), 0), 2_000)
    assert.strictEqual(shortestGapMs(cron("0,5 * * * *"), 0), 5 * 60_000)
    assert.strictEqual(parseWindow("1h"), 3_600_000)
    assert.strictEqual(parseWindow("90s"), 90_000)
  })

  it("bad cron, unknown zone, unknown connection, missing prompt: each reported with its path", () => {
    const result = decodeConfig({
      workspaces: [
        { id: "a", schedule: "61 * * * *", scheduledPrompt: "x", deliverTo: "cli:a" },
        { id: "b", schedule: "* * *", scheduledPrompt: "x", deliverTo: "cli:b" },
        { id: "c", schedule: "0 8 * * *", timezone: "Mars/Olympus", scheduledPrompt: "x", deliverTo: "cli:c" },
        { id: "d", schedule: "0 8 * * *", scheduledPrompt: "x", deliverTo: "nowhere:d" },
        { id: "e", schedule: "0 8 * * *" },
        { id: "f", schedule: "0 8 * * *", scheduledPrompt: "x", deliverTo: "no-colon" }
      ],
      routes: []
    }, "test")
    assert.isTrue(Either.isLeft(result))
    const problems = Either.isLeft(result) ? result.left.problems.map((p) => `${p.path}: ${p.reason}`) : []
    const has = (path: string, text: string) => assert.isTrue(problems.some((p) => p.startsWith(path) && p.includes(text)), `${path} ${text} in ${problems.join(" | ")}`)
    // The deliverTo pattern fails in Schema first, before the cross-field rules run.
    has("workspaces.5.deliverTo", "<connection>:<place>")
    const fixed = decodeConfig({
      workspaces: [
        { id: "a", schedule: "61 * * * *", scheduledPrompt: "x", deliverTo: "cli:a" },
        { id: "b", schedule: "* * *", scheduledPrompt: "x", deliverTo: "cli:b" },
        { id: "c", schedule: "0 8 * * *", timezone: "Mars/Olympus", scheduledPrompt: "x", deliverTo: "cli:c" },
        { id: "d", schedule: "0 8 * * *", scheduledPrompt: "x", deliverTo: "nowhere:d" },
        { id: "e", schedule: "0 8 * * *" }
      ],
      routes: []
    }, "test")
    const listed = Either.isLeft(fixed) ? fixed.left.problems.map((p) => `${p.path}: ${p.reason}`) : []
    problems.splice(0, problems.length, ...listed)
    has("workspaces.0.schedule", "between 0 and 59")
    has("workspaces.1.schedule", "5 or 6 cron fields")
    has("workspaces.2.timezone", "unknown time zone 'Mars/Olympus'")
    has("workspaces.3.deliverTo", "unknown connection 'nowhere'")
    has("workspaces.4.scheduledPrompt", "required with schedule")
    has("workspaces.4.deliverTo", "required with schedule")
    assert.strictEqual(listed.length, 6)
    assert.isTrue(Either.isRight(decodeConfig({ workspaces: [{ id: "m", schedule: "*/2 * * * * *", scheduledPrompt: "check", deliverTo: "cli:sched", timezone: "Europe/Berlin" }], routes: [] }, "t")))
  })
})
