/**
 * Schedules in a real host process: replies of a 2-second schedule on the host's stdout, and
 * kill -9 while runs fall due: each due time runs at most once, a due time passed while the host
 * was down runs once after the restart, and every run's turn completes with one reply sent once.
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { killAllHosts, killHard, query, startHost, stopHost } from "../channels/host-process.js"
import { BIN, cleanEnv, runCli } from "../support/cli.js"
import { tempDir } from "../support/db.js"
import { waitFor } from "../support/eventually.js"

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

afterAll(killAllHosts)

const scripted = { PYNCHY_EXECUTOR: "scripted" }

describe("schedules in a real host process", () => {
  it("a 2-second schedule to cli:sched prints replies on stdout at least twice within 6 s of ready; `pynchy tasks --json` lists it", { timeout: 120_000 }, async () => {
    const dir = tempDir()
    fs.writeFileSync(path.join(dir, "pynchy.yaml"), [
      "workspaces:",
      "  - { id: main, schedule: '*/2 * * * * *', scheduledPrompt: 'check in', deliverTo: 'cli:sched' }",
      "routes: [{ connection: cli, place: '*', workspace: main }]"
    ].join("\n") + "\n")
    const child = spawn(process.execPath, [BIN, "start"], {
      cwd: dir,
      env: { ...cleanEnv(), ...scripted, PYNCHY_CONFIG: path.join(dir, "pynchy.yaml"), PYNCHY_LOG_LEVEL: "info" },
      stdio: ["ignore", "pipe", "pipe"]
    })
    try {
      let readyAt = 0
      const replies: Array<number> = []
      child.stderr!.setEncoding("utf8").on("data", (d: string) => {
        if (readyAt === 0 && /INFO +ready epoch=/.test(d)) readyAt = Date.now()
      })
      child.stdout!.setEncoding("utf8").on("data", (d: string) => {
        for (const line of d.split("\n")) if (line === "[cli:sched] echo: check in") replies.push(Date.now())
      })
      await waitFor("the host ready", () => (readyAt > 0 ? true : undefined))
      await waitFor("two scheduled replies, or 6 s after ready", () => (replies.length >= 2 || Date.now() - readyAt > 6_000 ? true : undefined))
      const inTime = replies.filter((t) => t - readyAt <= 6_000).length
      assert.isAtLeast(inTime, 2, `replies within 6 s of ready: ${inTime}`)
      const listed = await runCli(["tasks", "--json"], { cwd: dir, env: { PYNCHY_CONFIG: path.join(dir, "pynchy.yaml") } })
      assert.strictEqual(listed.code, 0, listed.stderr)
      const tasks = JSON.parse(listed.stdout) as Array<{ id: string; status: string; nextDue: string; lastRun: { outcome: string } | null }>
      assert.strictEqual(tasks.length, 1)
      assert.strictEqual(tasks[0]!.id, "ws:main")
      assert.strictEqual(tasks[0]!.status, "active")
      // The next due time is a whole even second, in the future when it was read.
      assert.match(tasks[0]!.nextDue, /:\d[02468]\.000Z$/)
    } finally {
      await new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve()
        child.once("exit", () => resolve())
        child.kill("SIGINT")
      })
    }
  })

  it("a due time passed while the host was killed (-9) runs exactly once after the restart", { timeout: 180_000 }, async () => {
    const dir = tempDir()
    // One due time, far enough ahead for the host to start and be killed before it.
    const due = new Date(Math.ceil((Date.now() + 30_000) / 1_000) * 1_000)
    const cron = `${due.getUTCSeconds()} ${due.getUTCMinutes()} ${due.getUTCHours()} * * *`
    fs.writeFileSync(path.join(dir, "pynchy.yaml"), [
      `dataDir: ${dir}`,
      `workspaces: [{ id: main, schedule: '${cron}', timezone: UTC, scheduledPrompt: 'daily check', deliverTo: 'test:daily' }]`,
      "routes: [{ connection: test, place: '*', workspace: main }]",
      "connections: { test: { kind: recording, file: sent.jsonl, idempotent: true } }"
    ].join("\n") + "\n")
    const db = path.join(dir, "pynchy.db")
    const first = await startHost(dir, scripted)
    await killHard(first)
    assert.isBelow(Date.now(), due.getTime(), "the host must be killed before the due time (machine too slow: it started after it)")
    await sleep(due.getTime() - Date.now() + 500)
    const second = await startHost(dir, scripted)
    const runs = await waitFor("the missed run settled after the restart", () => {
      const r = query(db, "SELECT due_at AS dueAt, outcome FROM task_runs")
      return r.length > 0 && r.every((x) => x.outcome !== "queued") ? r : undefined
    })
    await stopHost(second)
    assert.deepStrictEqual(runs, [{ dueAt: due.getTime(), outcome: "delivered" }])
    const sent = fs.readFileSync(path.join(dir, "sent.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l) as { text: string })
    assert.deepStrictEqual(sent.map((s) => s.text), ["echo: daily check"])
  })

  it("kill -9 at random points of an every-second schedule: no due time runs twice, every run completes with its reply sent once", { timeout: 600_000 }, async () => {
    const dir = tempDir()
    fs.writeFileSync(path.join(dir, "pynchy.yaml"), [
      `dataDir: ${dir}`,
      "workspaces: [{ id: main, schedule: '* * * * * *', scheduledPrompt: 'tick', deliverTo: 'test:tick' }]",
      "routes: [{ connection: test, place: '*', workspace: main }]",
      "connections: { test: { kind: recording, file: sent.jsonl, idempotent: true, delayMs: 3 } }",
      "limits: { maxTurnAttempts: 1000, retryBaseMs: 1 }"
    ].join("\n") + "\n")
    const db = path.join(dir, "pynchy.db")
    let seed = 17
    const random = () => (seed = (seed * 1664525 + 1013904223) % 4294967296) / 4294967296
    const gaps: Array<{ killedAt: number; restartedAt: number }> = []
    for (let k = 0; k < 8; k++) {
      const host = await startHost(dir, { ...scripted, PYNCHY_SCRIPTED_DELAY_MS: "20" })
      await sleep(200 + random() * 2_500)
      await killHard(host)
      const killedAt = Date.now()
      await sleep(2_100)
      gaps.push({ killedAt, restartedAt: Date.now() })
    }
    const last = await startHost(dir, scripted)
    // Everything queued before this start is answered by it.
    const before = gaps.at(-1)!.restartedAt
    // A run is settled with its turn, when its reply is recorded; the reply is sent just after.
    await waitFor("every run queued before the last start answered and its reply sent", () => {
      const open = query(db, "SELECT count(*) AS n FROM task_runs WHERE outcome = 'queued' AND due_at < ?", before)[0]!.n as number
      const unsent = query(db, "SELECT count(*) AS n FROM task_runs r JOIN deliveries d ON d.turn_id = r.turn_id WHERE r.due_at < ? AND d.status = 'pending'", before)[0]!.n as number
      return open === 0 && unsent === 0 ? true : undefined
    }, "5 minutes")
    await stopHost(last)

    const runs = query(db, "SELECT due_at AS dueAt, outcome, message_id AS messageId FROM task_runs WHERE due_at < ? ORDER BY due_at", before)
    const messages = query(db, "SELECT id, metadata, handled_by AS handledBy FROM messages WHERE sender = 'schedule'")
    const dueOf = new Map(messages.map((m) => [m.id as number, (JSON.parse(m.metadata as string) as { dueAt: number }).dueAt]))
    // One message per run, one run per due time.
    const ran = runs.filter((r) => r.outcome !== "skipped")
    assert.isAbove(ran.length, 5)
    assert.strictEqual(new Set(messages.map((m) => dueOf.get(m.id as number))).size, messages.length)
    for (const r of ran) assert.strictEqual(dueOf.get(r.messageId as number), r.dueAt)
    // Each gap held at least two due seconds, and a kill never left a burst behind: after it, at most
    // one run is a catch-up (the rest of the gap is one skipped record).
    for (const g of gaps) {
      const inGap = ran.filter((r) => (r.dueAt as number) > g.killedAt && (r.dueAt as number) <= g.restartedAt)
      assert.isAtMost(inGap.length, 1, `runs for due times inside the downtime ${g.killedAt}..${g.restartedAt}`)
    }
    assert.isAbove(runs.filter((r) => r.outcome === "skipped").length, 0)
    // Every run's turn completed, and its one reply reached the channel exactly once.
    const completed = query(db, "SELECT m.id FROM messages m JOIN turns t ON t.id = m.handled_by WHERE m.sender = 'schedule' AND t.status = 'completed'").map((r) => r.id as number)
    for (const r of ran) assert.include(completed, r.messageId, `run ${r.dueAt} handled by a completed turn`)
    assert.deepStrictEqual([...new Set(ran.map((r) => r.outcome))], ["delivered"])
    const sent = fs.readFileSync(path.join(dir, "sent.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l) as { key: string; text: string })
    const keys = sent.map((s) => s.key)
    assert.strictEqual(new Set(keys).size, keys.length, "no reply sent twice")
    const replies = query(db, "SELECT count(*) AS n FROM deliveries WHERE kind = 'reply' AND status = 'sent'")[0]!.n as number
    assert.isAtLeast(replies, ran.length)
  })
})
