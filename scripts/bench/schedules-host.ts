/**
 * The host the schedules bench measures: the test stack on a SQLite file with `tasks` active tasks
 * due a day from now and later (nothing fires while it idles), an executor that records when each
 * turn starts. Run as a script (`node --import tsx schedules-host.ts <tasks> <idleMs>`) it is one
 * side of the idle CPU comparison: it says `ready`, waits for a line on stdin, and prints the CPU
 * it used over the next `idleMs` as JSON.
 */
import type { SqlClient } from "@effect/sql"
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
import type { Scheduler } from "../../src/schedules/Scheduler.js"

export const row = (id: string, due: number, everyMs: number | null) => ({
  id, workspace: WorkspaceId.make("main"), kind: "task" as const, conversationId: ConversationId.make(`cli:${id}`), connection: "cli", place: id, prompt: "tick",
  cron: null, timezone: null, everyMs, anchor: everyMs === null ? null : due, at: everyMs === null ? due : null,
  catchUpMs: 3_600_000, notifySkipped: false, pauseAfterMs: null, dailyTokens: null, definition: id, nextDue: due
})

/** A host holding `tasks` active tasks; `starts` receives the Clock time each turn's executor starts. */
export const schedulesHost = async (tasks: number, starts: Array<number> = []) => {
  const executor = Layer.merge(
    Layer.succeed(AgentExecutor, AgentExecutor.of({
      allocate: () => Effect.sync(() => ExecutorId.make(`inproc:${randomUUID()}`)),
      execute: () => Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sync(() => void starts.push(now))),
      adopt: () => new TurnFailed({ code: "not_adoptable", reason: "in-process", retryable: true })
    })),
    Layer.succeed(ExecutorLiveness, ExecutorLiveness.of({ isAlive: () => Effect.succeed(false) }))
  )
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pynchy-bench-sched-"))
  const config = Either.getOrThrow(decodeConfig({ dataDir: dir, workspaces: [{ id: "main" }], routes: [{ connection: "cli", place: "*", workspace: "main" }] }, "bench"))
  const scope = Effect.runSync(Scope.make())
  const ctx = await Effect.runPromise(Layer.buildWithScope(makeTestHost(config, { executor, databaseFile: path.join(dir, "pynchy.db") }).pipe(Layer.provide(Logger.minimumLogLevel(LogLevel.None))), scope))
  const run = <A>(e: Effect.Effect<A, never, TaskStore | Scheduler | SqlClient.SqlClient>) => Effect.runPromise(Effect.provide(e, ctx))
  const now = Date.now()
  await run(Effect.flatMap(TaskStore, (s) => Effect.forEach(Array.from({ length: tasks }, (_, i) => i), (i) => s.upsert(row(`b-${i}`, now + 86_400_000 + i * 1_000, 3_600_000), now), { discard: true })))
  return { run, close: () => Effect.runPromise(Scope.close(scope, Exit.void)), dir }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const tasks = Number(process.argv[2])
  const idleMs = Number(process.argv[3])
  const h = await schedulesHost(tasks)
  process.stdout.write("ready\n")
  await new Promise((resolve) => process.stdin.once("data", resolve))
  const before = process.cpuUsage()
  await new Promise((resolve) => setTimeout(resolve, idleMs))
  const used = process.cpuUsage(before)
  process.stdout.write(JSON.stringify({ cpuMs: (used.user + used.system) / 1_000 }) + "\n")
  await h.close()
  process.exit(0)
}
