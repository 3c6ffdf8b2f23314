/**
 * Scheduled work (issue 13):
 *   a. idle CPU of a host process holding 10,000 active tasks (none due) vs one with none, side by
 *      side over the same 60 s;
 *   b. the timer's next-due lookup and the reschedule after a run, p99, with 10,000 tasks, vs a
 *      bare `SELECT 1` through the same SqlClient;
 *   c. a due time to the turn's executor start, p50, vs the overshoot of a bare Effect.sleep.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import * as path from "node:path"
import { TaskStore } from "../../src/db/TaskStore.js"
import { Scheduler } from "../../src/schedules/Scheduler.js"
import { row, schedulesHost } from "./schedules-host.js"
import { median, percentile } from "./stats.js"
import type { Row } from "./types.js"

const TASKS = 10_000
const IDLE_MS = 60_000
const LOOKUPS = 2_000
const RUNS = 40

/**
 * Idle CPU of two host processes idling over the same 60 s, one holding TASKS tasks and one none:
 * side by side, so the machine's load weighs on both alike.
 */
const idleCpuMs = async (): Promise<{ none: number; many: number }> => {
  const side = (tasks: number) => {
    const child = spawn(process.execPath, ["--import", "tsx", path.join(import.meta.dirname, "schedules-host.ts"), String(tasks), String(IDLE_MS)], { stdio: ["pipe", "pipe", "inherit"] })
    let out = ""
    const lines = new Set<(text: string) => void>()
    child.stdout!.setEncoding("utf8").on("data", (d: string) => {
      out += d
      for (const l of lines) l(out)
    })
    const until = (pattern: RegExp) => new Promise<string>((resolve, reject) => {
      const check = (text: string) => {
        const m = pattern.exec(text)
        if (m !== null) resolve(m[0])
      }
      lines.add(check)
      check(out)
      child.once("exit", (code) => reject(new Error(`the ${tasks}-task host exited ${code} before printing ${pattern}`)))
    })
    return { child, until }
  }
  const none = side(0)
  const many = side(TASKS)
  await Promise.all([none.until(/ready\n/), many.until(/ready\n/)])
  // Both settle after their start before the window opens.
  await new Promise((r) => setTimeout(r, 2_000))
  none.child.stdin!.write("go\n")
  many.child.stdin!.write("go\n")
  const [a, b] = await Promise.all([none.until(/\{.*\}/), many.until(/\{.*\}/)])
  return { none: (JSON.parse(a) as { cpuMs: number }).cpuMs, many: (JSON.parse(b) as { cpuMs: number }).cpuMs }
}

export default async (): Promise<ReadonlyArray<Row>> => {
  const rows: Array<Row> = []
  const { none, many } = await idleCpuMs()
  rows.push({ name: `idle CPU over ${IDLE_MS / 1000} s, ${TASKS} active tasks`, value: many, unit: "ms", baseline: { name: "no tasks", value: none }, goal: "within noise" })

  const starts: Array<number> = []
  const h = await schedulesHost(TASKS, starts)
  try {
    const lookups: Array<number> = []
    const bare: Array<number> = []
    await h.run(Effect.gen(function* () {
      const store = yield* TaskStore
      const sql = yield* SqlClient.SqlClient
      const base = Date.now() + 86_400_000
      for (let i = 0; i < LOOKUPS; i++) {
        const t0 = performance.now()
        yield* sql`SELECT 1`.pipe(Effect.orDie)
        bare.push(performance.now() - t0)
        const t1 = performance.now()
        yield* store.earliestDue
        const id = `b-${i % TASKS}`
        const from = base + (i % TASKS) * 1_000 + Math.floor(i / TASKS) * 3_600_000
        yield* store.advance(id, from, from + 3_600_000, Date.now())
        lookups.push(performance.now() - t1)
      }
    }))
    rows.push({ name: `next-due lookup + reschedule, p50 (${TASKS} tasks)`, value: median(lookups), unit: "ms", baseline: { name: "SELECT 1, p50", value: median(bare) } })
    rows.push({ name: `next-due lookup + reschedule, p99 (${TASKS} tasks)`, value: percentile(lookups, 99), unit: "ms", baseline: { name: "SELECT 1, p99", value: percentile(bare, 99) }, goal: "≤ 1 ms" })

    const latencies: Array<number> = []
    const oversleep: Array<number> = []
    for (let i = 0; i < RUNS; i++) {
      const due = Date.now() + 30
      const seen = starts.length
      await h.run(Effect.gen(function* () {
        yield* Effect.flatMap(TaskStore, (s) => s.upsert(row(`due-${i}`, due, null), Date.now()))
        yield* Effect.flatMap(Scheduler, (s) => s.wake)
      }))
      while (starts.length === seen) await new Promise((r) => setTimeout(r, 1))
      latencies.push(starts[seen]! - due)
      const t = Date.now()
      await Effect.runPromise(Effect.sleep("30 millis"))
      oversleep.push(Date.now() - t - 30)
    }
    rows.push({ name: "due time → executor start, p50", value: median(latencies), unit: "ms", baseline: { name: "Effect.sleep overshoot, p50", value: median(oversleep) }, goal: "≤ 5 ms" })
  } finally {
    await h.close()
  }
  return rows
}
