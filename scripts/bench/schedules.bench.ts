/**
 * Scheduled work (issue 13):
 *   a. idle CPU of a host holding 10,000 active tasks (none due) vs the same host with none;
 *   b. the timer's next-due lookup and the reschedule after a run, p99, with 10,000 tasks, vs a
 *      bare `SELECT 1` through the same SqlClient;
 *   c. a due time to the turn's executor start, p50, vs the overshoot of a bare Effect.sleep.
 */
import { SqlClient } from "@effect/sql"
import { Clock, Effect, Either, Exit, Layer, Logger, LogLevel, Scope } from "effect"
import { randomUUID } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { makeTestHost } from "../../layers/test.js"
import { decodeConfig } from "../../src/config/HostConfig.js"
import { TaskStore } from "../../src/db/TaskStore.js"
import { ConversationId, ExecutorId, WorkspaceId } from "../../src/domain/ids.js"
import { AgentExecutor, ExecutorLiveness, TurnFailed } from "../../src/pipeline/AgentExecutor.js"
import { Scheduler } from "../../src/schedules/Scheduler.js"
import { median, percentile } from "./stats.js"
import type { Row } from "./types.js"

const TASKS = 10_000
const IDLE_MS = 60_000
const LOOKUPS = 2_000
const RUNS = 40

const starts: Array<number> = []
const executor = Layer.merge(
  Layer.succeed(AgentExecutor, AgentExecutor.of({
    allocate: () => Effect.sync(() => ExecutorId.make(`inproc:${randomUUID()}`)),
    execute: () => Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sync(() => void starts.push(now))),
    adopt: () => new TurnFailed({ code: "not_adoptable", reason: "in-process", retryable: true })
  })),
  Layer.succeed(ExecutorLiveness, ExecutorLiveness.of({ isAlive: () => Effect.succeed(false) }))
)

const host = async (tasks: number) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pynchy-bench-sched-"))
  const config = Either.getOrThrow(decodeConfig({ dataDir: dir, workspaces: [{ id: "main" }], routes: [{ connection: "cli", place: "*", workspace: "main" }] }, "bench"))
  const scope = Effect.runSync(Scope.make())
  const ctx = await Effect.runPromise(Layer.buildWithScope(makeTestHost(config, { executor, databaseFile: path.join(dir, "pynchy.db") }).pipe(Layer.provide(Logger.minimumLogLevel(LogLevel.None))), scope))
  const run = <A>(e: Effect.Effect<A, never, TaskStore | Scheduler | SqlClient.SqlClient>) => Effect.runPromise(Effect.provide(e, ctx))
  // Due a day from now and later: nothing fires while the host idles.
  const now = Date.now()
  await run(Effect.flatMap(TaskStore, (s) => Effect.forEach(Array.from({ length: tasks }, (_, i) => i), (i) => s.upsert(row(`b-${i}`, now + 86_400_000 + i * 1_000, 3_600_000), now), { discard: true })))
  return { run, close: () => Effect.runPromise(Scope.close(scope, Exit.void)), dir }
}

const row = (id: string, due: number, everyMs: number | null) => ({
  id, workspace: WorkspaceId.make("main"), kind: "task" as const, conversationId: ConversationId.make(`cli:${id}`), connection: "cli", place: id, prompt: "tick",
  cron: null, timezone: null, everyMs, anchor: everyMs === null ? null : due, at: everyMs === null ? due : null,
  catchUpMs: 3_600_000, notifySkipped: false, pauseAfterMs: null, dailyTokens: null, definition: id, nextDue: due
})

const idleCpuMs = async (tasks: number) => {
  const h = await host(tasks)
  try {
    await new Promise((r) => setTimeout(r, 2_000))
    const before = process.cpuUsage()
    await new Promise((r) => setTimeout(r, IDLE_MS))
    const used = process.cpuUsage(before)
    return (used.user + used.system) / 1_000
  } finally {
    await h.close()
  }
}

export default async (): Promise<ReadonlyArray<Row>> => {
  const rows: Array<Row> = []
  const none = await idleCpuMs(0)
  const many = await idleCpuMs(TASKS)
  rows.push({ name: `idle CPU over ${IDLE_MS / 1000} s, ${TASKS} active tasks`, value: many, unit: "ms", baseline: { name: "no tasks", value: none }, goal: "within noise" })

  const h = await host(TASKS)
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
