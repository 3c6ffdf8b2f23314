import { SqlClient } from "@effect/sql"
import { Clock, Effect, Either } from "effect"
import { MessageStore } from "../db/MessageStore.js"
import { TaskStore } from "../db/TaskStore.js"
import { type ConnectionName, conversationIdOf } from "../domain/ids.js"
import { type ScheduledTask, utcMidnight } from "../domain/task.js"

/** The sender of every message a schedule or task queues. */
export const SCHEDULE_SENDER = "schedule"

/**
 * Queues the run of `task` for `dueAt`: the run record keyed (task, due time), the message from
 * `schedule` (its receipt keyed the same way) and the conversation on first sight, in ONE
 * transaction. False when that due time already has a run: it never runs twice.
 */
export const enqueueRun = (task: ScheduledTask, dueAt: number, now: number) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const store = yield* TaskStore
    const messages = yield* MessageStore
    return yield* sql.withTransaction(
      Effect.gen(function* () {
        if (!(yield* store.recordRun({ taskId: task.id, dueAt, outcome: "queued" }, now))) return false
        const [ingested] = yield* messages.ingestBatch([{
          conversationId: conversationIdOf(task.connection, task.place),
          connection: task.connection as ConnectionName,
          place: task.place,
          workspace: task.workspace,
          providerEventId: `schedule:${task.id}:${dueAt}`,
          sender: SCHEDULE_SENDER,
          text: task.prompt,
          metadata: { task: task.id, dueAt }
        }])
        yield* store.attachMessage(task.id, dueAt, ingested!.messageId)
        return true
      })
    ).pipe(Effect.orDie)
  })

/**
 * `pynchy tasks run <id>`: one extra run now, queued like a due one. It spends from the same
 * daily cap as the scheduled runs, so a task at its cap is refused with the reason.
 */
export const runNow = (id: string) =>
  Effect.gen(function* () {
    const store = yield* TaskStore
    const found = yield* store.get(id)
    if (found._tag === "None") return Either.left(`no task ${id}`)
    const task = found.value
    const now = yield* Clock.currentTimeMillis
    if (task.dailyTokens !== null) {
      const used = (yield* store.tokensSince(utcMidnight(now), id)).get(id) ?? 0
      if (used >= task.dailyTokens) return Either.left(`${id} has used its daily token cap (${used} of ${task.dailyTokens} tokens today, UTC); it can run again after midnight UTC`)
    }
    yield* enqueueRun(task, now, now)
    return Either.right(task)
  })
