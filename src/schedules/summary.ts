import { Clock, Effect, Option } from "effect"
import { TaskStore } from "../db/TaskStore.js"
import { type ScheduledTask, utcMidnight } from "../domain/task.js"

/** A task as `pynchy tasks` and `pynchy status` show it. */
export interface TaskSummary {
  readonly id: string
  readonly kind: ScheduledTask["kind"]
  readonly workspace: string
  readonly conversation: string
  readonly when: string
  readonly status: ScheduledTask["status"] | "paused"
  readonly nextDue: string | null
  readonly lastRun: { readonly dueAt: string; readonly outcome: string; readonly reason: string | null } | null
  /** Gateway tokens its runs' turns spent today (UTC), from the gateway's usage events. */
  readonly tokensToday: number
  /** Its own cap per UTC day, if it has one. */
  readonly dailyTokens: number | null
  readonly prompt: string
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())

export const whenOf = (t: ScheduledTask): string =>
  t.cron !== null ? `cron "${t.cron}" (${t.timezone})` : t.everyMs !== null ? `every ${t.everyMs / 1000}s` : `once at ${iso(t.at)}`

/** Every task (active first, then the rest, newest first) with its last run. */
export const taskSummaries = Effect.gen(function* () {
  const store = yield* TaskStore
  const tasks = yield* store.list()
  const ordered = [...tasks.filter((t) => t.status === "active"), ...tasks.filter((t) => t.status !== "active")]
  const spent = yield* store.tokensSince(utcMidnight(yield* Clock.currentTimeMillis))
  return yield* Effect.forEach(ordered, (t) =>
    Effect.map(store.lastRun(t.id), (last): TaskSummary => ({
      id: t.id,
      kind: t.kind,
      workspace: t.workspace,
      conversation: t.conversationId,
      when: whenOf(t),
      status: t.status === "active" && t.pausedAt !== null ? "paused" : t.status,
      nextDue: t.status === "active" ? iso(t.nextDue) : null,
      lastRun: Option.match(last, { onNone: () => null, onSome: (r) => ({ dueAt: iso(r.dueAt)!, outcome: r.outcome, reason: r.reason }) }),
      tokensToday: spent.get(t.id) ?? 0,
      dailyTokens: t.dailyTokens,
      prompt: t.prompt
    })))
})

export const formatSummary = (s: TaskSummary): string =>
  `${s.id}  ${s.status}  ${s.when}  -> ${s.conversation}  next ${s.nextDue ?? "-"}  ` +
  `last ${s.lastRun ? `${s.lastRun.dueAt} ${s.lastRun.outcome}${s.lastRun.reason !== null ? ` (${s.lastRun.reason})` : ""}` : "never"}  ` +
  `tokens today ${s.tokensToday}${s.dailyTokens !== null ? ` of ${s.dailyTokens}` : ""}`
