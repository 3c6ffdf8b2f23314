import { SqlClient } from "@effect/sql"
import { Cause, Clock, Context, Duration, Effect, Layer, Queue } from "effect"
import { HostConfig } from "../config/HostConfig.js"
import { MessageStore } from "../db/MessageStore.js"
import { TaskStore } from "../db/TaskStore.js"
import { conversationIdOf } from "../domain/ids.js"
import { type ScheduledTask, utcMidnight } from "../domain/task.js"
import { EventBus, type Publishable } from "../events/EventBus.js"
import { InboundCommitted } from "../pipeline/InboundCommitted.js"
import { Outbox } from "../pipeline/Outbox.js"
import { TurnSignal } from "../pipeline/TurnSignal.js"
import { AgentTasks } from "./AgentTasks.js"
import { recurrenceOf, scheduleRowOf } from "./definitions.js"
import { latestDue, nextDue } from "../domain/due.js"
import { enqueueRun, SCHEDULE_SENDER } from "./runs.js"

/** What firing a due task did. */
export type Fired = "ran" | "skipped" | "paused" | "gone"

/** Most due tasks one pass fires before it looks at the clock again. */
const BATCH = 256

export declare namespace Scheduler {
  /**
   * Runs scheduled work: one timer fiber sleeps on the Clock until the earliest stored due time
   * (no polling, no timer per task), fires what is due, and sleeps again. Each firing is one
   * transaction (run record, message, next due time), then the conversation is signalled, so
   * the turn goes through the normal pipeline.
   */
  export interface Service {
    /** Something changed (a task created or cancelled): look at the earliest due time again. */
    readonly wake: Effect.Effect<void>
    /** Fires one due task now (the timer does this; exposed for tests and benches). */
    readonly fire: (task: ScheduledTask) => Effect.Effect<Fired>
    /** Due tasks fired since start. */
    readonly fired: Effect.Effect<number>
  }
}

export class Scheduler extends Context.Tag("pynchy/Scheduler")<Scheduler, Scheduler.Service>() {
  static readonly make = Effect.gen(function* () {
    const { config } = yield* HostConfig
    const sql = yield* SqlClient.SqlClient
    const store = yield* TaskStore
    const outbox = yield* Outbox
    const signals = yield* TurnSignal
    const bus = yield* EventBus
    const context = yield* Effect.context<SqlClient.SqlClient | TaskStore | MessageStore>()
    const wakeups = yield* Queue.sliding<void>(1)
    // Tasks agents create or cancel wake the timer too.
    const { changes } = yield* AgentTasks
    // A user's message resumes its conversation's paused schedule at once (a due time checks again
    // anyway, for messages other processes commit).
    yield* Effect.flatMap(InboundCommitted, (inbound) =>
      inbound.consume((m) =>
        m.sender === SCHEDULE_SENDER ? Effect.void : Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.asVoid(store.resumeIn(m.conversationId, now)))
      ))
    let firedCount = 0

    // The config's schedules become rows. An unchanged one keeps its stored due time (so a run
    // missed while the host was down is caught up); a new or changed one is due next after now.
    const now0 = yield* Clock.currentTimeMillis
    const configured = new Set<string>()
    for (const w of config.workspaces) {
      if (w.schedule === undefined) continue
      const row = scheduleRowOf({ ...w, schedule: w.schedule }, now0)
      configured.add(row.id)
      const existing = yield* store.get(row.id)
      if (existing._tag === "Some" && existing.value.status === "active" && existing.value.definition === row.definition) continue
      yield* store.upsert(row, now0)
    }
    for (const t of yield* store.list({ activeOnly: true })) {
      if (t.kind === "schedule" && !configured.has(t.id)) yield* store.cancel(t.id, now0)
    }

    const notice = (t: ScheduledTask, key: string, text: string) => outbox.record(t.conversationId, null, [{ idempotencyKey: `task:${t.id}:${key}`, kind: "notice", text }])

    const fire = Effect.fn("Scheduler.fire")(function* (task: ScheduledTask) {
      const now = yield* Clock.currentTimeMillis
      // Published once the transaction has committed.
      const events: Array<Publishable> = []
      const result = yield* sql.withTransaction(Effect.gen(function* () {
        const fresh = yield* store.get(task.id)
        if (fresh._tag === "None" || fresh.value.status !== "active" || fresh.value.nextDue === null || fresh.value.nextDue > now) return "gone" as const
        const t = fresh.value
        const due = t.nextDue!
        const recurrence = recurrenceOf(t)
        const latest = latestDue(recurrence, due, now)!
        const next = nextDue(recurrence, now)
        // Never a burst: of everything missed, at most the latest runs, and only if it is young enough.
        const tooOld = now - latest > t.catchUpMs
        const skippedThrough = tooOld ? latest : latest > due ? latestDue(recurrence, due, latest - 1) : null
        if (skippedThrough !== null) {
          events.push({ type: "schedule.skipped", taskId: t.id, conversationId: t.conversationId, dueAt: due, reason: "too_old" })
          yield* store.recordRun({ taskId: t.id, dueAt: due, outcome: "skipped", skippedThrough, reason: "the host was down" }, now)
          if (t.notifySkipped) {
            yield* notice(t, `skipped:${due}`, `(Skipped scheduled runs from ${new Date(due).toISOString()} to ${new Date(skippedThrough).toISOString()}: the host was down.)`)
          }
        }
        if (tooOld) {
          yield* store.advance(t.id, due, next, now)
          return "skipped" as const
        }
        if (t.pauseAfterMs !== null) {
          const lastUser = yield* store.lastUserMessageAt(t.conversationId)
          const idleSince = Math.max(lastUser ?? 0, t.createdAt)
          if (now - idleSince > t.pauseAfterMs) {
            events.push({ type: "schedule.skipped", taskId: t.id, conversationId: t.conversationId, dueAt: latest, reason: "paused" })
            if (t.pausedAt === null) {
              yield* store.setPaused(t.id, now, now)
              const days = Math.round(t.pauseAfterMs / 86_400_000)
              yield* notice(t, `paused:${now}`, `(Paused the scheduled '${t.id}' runs: no message from you in ${days} days. Send any message to resume them.)`)
            }
            yield* store.advance(t.id, due, next, now)
            return "paused" as const
          }
          if (t.pausedAt !== null) yield* store.setPaused(t.id, null, now)
        }
        if (t.dailyTokens !== null) {
          // Its turns' gateway usage today (UTC): at or over its cap, the run is skipped with the reason.
          const used = (yield* store.tokensSince(utcMidnight(now), t.id)).get(t.id) ?? 0
          if (used >= t.dailyTokens) {
            const reason = `daily token cap: ${used} of ${t.dailyTokens} tokens used today (UTC)`
            events.push({ type: "schedule.skipped", taskId: t.id, conversationId: t.conversationId, dueAt: latest, reason: "token_cap" })
            yield* store.recordRun({ taskId: t.id, dueAt: latest, outcome: "skipped", reason }, now)
            if (t.notifySkipped) yield* notice(t, `capped:${latest}`, `(Skipped the scheduled '${t.id}' run: its ${reason}.)`)
            yield* store.advance(t.id, due, next, now)
            return "skipped" as const
          }
        }
        yield* enqueueRun(t, latest, now).pipe(Effect.provide(context))
        events.push({ type: "schedule.run", taskId: t.id, conversationId: t.conversationId, dueAt: latest })
        yield* store.advance(t.id, due, next, now)
        return "ran" as const
      })).pipe(Effect.orDie)
      yield* bus.publishAll(events)
      if (result === "ran") {
        firedCount++
        yield* signals.signal(conversationIdOf(task.connection, task.place))
      }
      return result
    })

    const pass = Effect.gen(function* () {
      while (true) {
        const now = yield* Clock.currentTimeMillis
        const due = yield* store.due(now, BATCH)
        for (const t of due) yield* fire(t)
        if (due.length < BATCH) return
      }
    })

    const timer = Effect.gen(function* () {
      while (true) {
        // A failed pass must not spin: it is logged and retried after a second.
        yield* pass.pipe(Effect.catchAllCause((cause) =>
          Effect.logError("scheduled run failed").pipe(Effect.annotateLogs({ cause: Cause.pretty(cause).split("\n")[0] }), Effect.zipRight(Effect.sleep(Duration.seconds(1))))
        ))
        const earliest = yield* store.earliestDue
        const now = yield* Clock.currentTimeMillis
        const wait = earliest === null ? Duration.infinity : Duration.millis(Math.max(0, earliest - now))
        yield* Effect.raceAll([Effect.sleep(wait), Queue.take(wakeups), Queue.take(changes)])
      }
    })
    yield* Effect.forkScoped(timer)

    return Scheduler.of({
      wake: Effect.asVoid(Queue.offer(wakeups, undefined)),
      fire,
      fired: Effect.sync(() => firedCount)
    })
  })

  static readonly layer = Layer.scoped(Scheduler, Scheduler.make)
}
