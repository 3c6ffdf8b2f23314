import { SqlClient, SqlSchema } from "@effect/sql"
import { Context, Effect, Layer, Option, Schema } from "effect"
import type { MessageId } from "../domain/ids.js"
import { RunOutcome, ScheduledTask, TaskRun } from "../domain/task.js"
import { BoolColumn } from "./rows.js"
import { asJsonText, jsonFieldText, jsonNumberText } from "./dialect.js"

const TaskRow = Schema.Struct({ ...ScheduledTask.fields, notifySkipped: BoolColumn })

const taskColumns = `id, workspace, kind, conversation_id AS "conversationId", connection, place, prompt, cron, timezone,
  every_ms AS "everyMs", anchor, at, catch_up_ms AS "catchUpMs", notify_skipped AS "notifySkipped", pause_after_ms AS "pauseAfterMs",
  daily_tokens AS "dailyTokens", definition, status, paused_at AS "pausedAt", next_due AS "nextDue", created_at AS "createdAt", updated_at AS "updatedAt"`

const runColumns = `task_id AS "taskId", due_at AS "dueAt", outcome, message_id AS "messageId", turn_id AS "turnId",
  skipped_through AS "skippedThrough", reason, created_at AS "createdAt", finished_at AS "finishedAt"`

/**
 * The turns of a task's runs since a time (a run's turn: its own once settled, else the one
 * holding its message), each once, then the gateway usage of those turns since that time. Runs due
 * up to a day earlier are looked at: a run due before midnight may spend after it.
 */
const spendSql = (sql: SqlClient.SqlClient, since: number, taskId: string | undefined, spend: { readonly tokens: string; readonly turnId: string; readonly turn: string }) =>
  sql<{ taskId: string; tokens: number }>`WITH run_turns AS (
    SELECT DISTINCT r.task_id, COALESCE(r.turn_id, c.turn_id) AS turn
    FROM task_runs r LEFT JOIN delivery_claims c ON c.message_id = r.message_id
    WHERE ${taskId === undefined ? sql.literal("1 = 1") : sql`r.task_id = ${taskId}`} AND r.due_at >= ${since - 86_400_000} AND r.outcome <> 'skipped'
  )
  SELECT t.task_id AS "taskId", SUM(${sql.literal(spend.tokens)}) AS tokens
  FROM run_turns t JOIN events e ON ${sql.literal(spend.turnId)} = ${sql.literal(spend.turn)} AND e.type = 'gateway.call'
  WHERE e.at >= ${since}
  GROUP BY t.task_id`

/** A task as written; status, pause and timestamps are the store's. */
export type NewTask = Omit<ScheduledTask, "status" | "pausedAt" | "createdAt" | "updatedAt">

export declare namespace TaskStore {
  /** Scheduled tasks and their runs (docs/schedules.md). */
  export interface Service {
    readonly get: (id: string) => Effect.Effect<Option.Option<ScheduledTask>>
    /** Every task (of one workspace), newest first; cancelled and done ones included unless `activeOnly`. */
    readonly list: (filter?: { readonly workspace?: string; readonly activeOnly?: boolean }) => Effect.Effect<ReadonlyArray<ScheduledTask>>
    readonly countActive: (workspace: string) => Effect.Effect<number>
    /** Inserts a new task, or (same id) replaces its definition, reactivates it and sets its next due time. */
    readonly upsert: (task: NewTask, now: number) => Effect.Effect<void>
    /** active → cancelled; false when it was not active (or not the workspace's). */
    readonly cancel: (id: string, now: number, workspace?: string) => Effect.Effect<boolean>
    /** The earliest due time of an active task: the timer's one lookup. */
    readonly earliestDue: Effect.Effect<number | null>
    /** Active tasks due at or before `now`, earliest first. */
    readonly due: (now: number, limit: number) => Effect.Effect<ReadonlyArray<ScheduledTask>>
    /** Moves the stored due time on (compare-and-set on the due time that was fired); null ends the task (done). */
    readonly advance: (id: string, from: number, next: number | null, now: number) => Effect.Effect<boolean>
    readonly setPaused: (id: string, pausedAt: number | null, now: number) => Effect.Effect<void>
    /** Un-pauses the paused tasks of a conversation (a user wrote in it); how many. */
    readonly resumeIn: (conversationId: string, now: number) => Effect.Effect<number>
    /** Records a run; false when (task, due time) was already recorded. */
    readonly recordRun: (
      run: { readonly taskId: string; readonly dueAt: number; readonly outcome: RunOutcome; readonly skippedThrough?: number; readonly reason?: string },
      now: number
    ) => Effect.Effect<boolean>
    readonly attachMessage: (taskId: string, dueAt: number, messageId: MessageId) => Effect.Effect<void>
    /**
     * Gateway tokens spent since `since` by the turns of each task's runs (its usage events carry
     * the turn id), per task id; one task's when `taskId` is given. A run is settled by the end
     * of its turn (TurnStore), in the same transaction.
     */
    readonly tokensSince: (since: number, taskId?: string) => Effect.Effect<ReadonlyMap<string, number>>
    /**
     * What a turn answering these messages may still spend: the least that any capped task
     * (`dailyTokens`) among their runs has left since `since`; null when none is capped.
     */
    readonly tokensLeft: (messageIds: ReadonlyArray<MessageId>, since: number) => Effect.Effect<number | null>
    readonly lastRun: (taskId: string) => Effect.Effect<Option.Option<TaskRun>>
    readonly runs: (taskId: string, limit: number) => Effect.Effect<ReadonlyArray<TaskRun>>
    /** When the conversation last had an inbound message from anyone but the scheduler. */
    readonly lastUserMessageAt: (conversationId: string) => Effect.Effect<number | null>
    /**
     * Whether a turn answers an inbound message from anyone but the scheduler (claimed while it
     * runs, handled once it ended). False for a turn started by tasks alone, and for an unknown turn.
     */
    readonly answersUser: (turnId: number) => Effect.Effect<boolean>
  }
}

export class TaskStore extends Context.Tag("pynchy/TaskStore")<TaskStore, TaskStore.Service>() {
  static readonly make = Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    // The join of 0012's events_turn index, in the dialect at hand.
    const spend = { tokens: jsonNumberText(sql, "e.payload", "totalTokens"), turnId: jsonFieldText(sql, "e.payload", "turnId"), turn: asJsonText(sql, "t.turn") }
    const findTask = SqlSchema.findOne({ Request: Schema.String, Result: TaskRow, execute: (id) => sql`SELECT ${sql.literal(taskColumns)} FROM scheduled_tasks WHERE id = ${id}` })
    const toTask = (r: typeof TaskRow.Type) => ScheduledTask.make(r)
    const decodeTasks = Schema.decodeUnknown(Schema.Array(TaskRow))
    const decodeRuns = Schema.decodeUnknown(Schema.Array(TaskRun))

    const list: TaskStore.Service["list"] = (filter = {}) =>
      Effect.gen(function* () {
        const rows = yield* sql`SELECT ${sql.literal(taskColumns)} FROM scheduled_tasks
          WHERE (CAST(${filter.workspace ?? null} AS TEXT) IS NULL OR workspace = ${filter.workspace ?? null})
            AND (${filter.activeOnly ? 1 : 0} = 0 OR status = 'active')
          ORDER BY created_at DESC, id`
        return (yield* decodeTasks(rows)).map(toTask)
      }).pipe(Effect.orDie)

    const runs: TaskStore.Service["runs"] = (taskId, limit) =>
      sql`SELECT ${sql.literal(runColumns)} FROM task_runs WHERE task_id = ${taskId} ORDER BY due_at DESC LIMIT ${limit}`.pipe(
        Effect.flatMap(decodeRuns),
        Effect.map((rs) => rs.map((r) => TaskRun.make(r))),
        Effect.orDie
      )

    const tokensSince: TaskStore.Service["tokensSince"] = (since, taskId) =>
      spendSql(sql, since, taskId, spend).pipe(Effect.map((rows) => new Map(rows.map((r) => [r.taskId, Number(r.tokens)]))), Effect.orDie)

    return TaskStore.of({
      get: (id) => findTask(id).pipe(Effect.map(Option.map(toTask)), Effect.orDie),
      list,
      countActive: (workspace) =>
        sql<{ n: number }>`SELECT count(*) AS n FROM scheduled_tasks WHERE workspace = ${workspace} AND kind = 'task' AND status = 'active'`.pipe(
          Effect.map((r) => r[0]!.n),
          Effect.orDie
        ),
      upsert: (t, now) =>
        sql`INSERT INTO scheduled_tasks (id, workspace, kind, conversation_id, connection, place, prompt, cron, timezone, every_ms, anchor, at,
            catch_up_ms, notify_skipped, pause_after_ms, daily_tokens, definition, status, paused_at, next_due, created_at, updated_at)
          VALUES (${t.id}, ${t.workspace}, ${t.kind}, ${t.conversationId}, ${t.connection}, ${t.place}, ${t.prompt}, ${t.cron}, ${t.timezone},
            ${t.everyMs}, ${t.anchor}, ${t.at}, ${t.catchUpMs}, ${t.notifySkipped ? 1 : 0}, ${t.pauseAfterMs}, ${t.dailyTokens}, ${t.definition},
            ${t.nextDue === null ? "done" : "active"}, NULL, ${t.nextDue}, ${now}, ${now})
          ON CONFLICT (id) DO UPDATE SET workspace = excluded.workspace, conversation_id = excluded.conversation_id, connection = excluded.connection,
            place = excluded.place, prompt = excluded.prompt, cron = excluded.cron, timezone = excluded.timezone, every_ms = excluded.every_ms,
            anchor = excluded.anchor, at = excluded.at, catch_up_ms = excluded.catch_up_ms, notify_skipped = excluded.notify_skipped,
            pause_after_ms = excluded.pause_after_ms, daily_tokens = excluded.daily_tokens, definition = excluded.definition,
            status = excluded.status, paused_at = NULL, next_due = excluded.next_due, updated_at = excluded.updated_at`.pipe(Effect.asVoid, Effect.orDie),
      cancel: (id, now, workspace) =>
        sql<{ id: string }>`UPDATE scheduled_tasks SET status = 'cancelled', next_due = NULL, updated_at = ${now}
          WHERE id = ${id} AND status = 'active' AND (CAST(${workspace ?? null} AS TEXT) IS NULL OR workspace = ${workspace ?? null}) RETURNING id`.pipe(
          Effect.map((r) => r.length > 0),
          Effect.orDie
        ),
      earliestDue: sql<{ due: number | null }>`SELECT min(next_due) AS due FROM scheduled_tasks WHERE status = 'active'`.pipe(
        Effect.map((r) => r[0]?.due ?? null),
        Effect.orDie
      ),
      due: (now, limit) =>
        sql`SELECT ${sql.literal(taskColumns)} FROM scheduled_tasks WHERE status = 'active' AND next_due <= ${now} ORDER BY next_due LIMIT ${limit}`.pipe(
          Effect.flatMap(decodeTasks),
          Effect.map((rs) => rs.map(toTask)),
          Effect.orDie
        ),
      advance: (id, from, next, now) =>
        sql<{ id: string }>`UPDATE scheduled_tasks SET next_due = ${next}, status = ${next === null ? "done" : "active"}, updated_at = ${now}
          WHERE id = ${id} AND status = 'active' AND next_due = ${from} RETURNING id`.pipe(Effect.map((r) => r.length > 0), Effect.orDie),
      setPaused: (id, pausedAt, now) => sql`UPDATE scheduled_tasks SET paused_at = ${pausedAt}, updated_at = ${now} WHERE id = ${id}`.pipe(Effect.asVoid, Effect.orDie),
      // Called for every inbound message, and almost always nothing is paused: a read on the
      // partial index answers that without taking the write lock the ingest's commits need.
      resumeIn: (conversationId, now) =>
        sql<{ n: number }>`SELECT 1 AS n FROM scheduled_tasks WHERE conversation_id = ${conversationId} AND paused_at IS NOT NULL LIMIT 1`.pipe(
          Effect.flatMap((paused) =>
            paused.length === 0
              ? Effect.succeed(0)
              : sql<{ id: string }>`UPDATE scheduled_tasks SET paused_at = NULL, updated_at = ${now}
                  WHERE conversation_id = ${conversationId} AND paused_at IS NOT NULL RETURNING id`.pipe(Effect.map((r) => r.length))
          ),
          Effect.orDie
        ),
      recordRun: (run, now) =>
        sql<{ n: number }>`INSERT INTO task_runs (task_id, due_at, outcome, skipped_through, reason, created_at)
          VALUES (${run.taskId}, ${run.dueAt}, ${run.outcome}, ${run.skippedThrough ?? null}, ${run.reason ?? null}, ${now})
          ON CONFLICT (task_id, due_at) DO NOTHING RETURNING 1 AS n`.pipe(Effect.map((r) => r.length > 0), Effect.orDie),
      attachMessage: (taskId, dueAt, messageId) =>
        sql`UPDATE task_runs SET message_id = ${messageId} WHERE task_id = ${taskId} AND due_at = ${dueAt}`.pipe(Effect.asVoid, Effect.orDie),
      tokensSince,
      tokensLeft: (messageIds, since) =>
        Effect.gen(function* () {
          const capped = yield* sql<{ id: string; cap: number }>`SELECT DISTINCT t.id, t.daily_tokens AS cap FROM task_runs r JOIN scheduled_tasks t ON t.id = r.task_id
            WHERE ${sql.in("r.message_id", messageIds)} AND t.daily_tokens IS NOT NULL`
          let left: number | null = null
          for (const { id, cap } of capped) {
            const used = (yield* tokensSince(since, id)).get(id) ?? 0
            left = Math.min(left ?? Infinity, Math.max(0, cap - used))
          }
          return left
        }).pipe(Effect.orDie),
      lastRun: (taskId) => runs(taskId, 1).pipe(Effect.map((rs) => Option.fromNullable(rs[0]))),
      runs,
      lastUserMessageAt: (conversationId) =>
        sql<{ at: number | null }>`SELECT max(created_at) AS at FROM messages WHERE conversation_id = ${conversationId} AND direction = 'in' AND sender <> 'schedule'`.pipe(
          Effect.map((r) => r[0]?.at ?? null),
          Effect.orDie
        ),
      answersUser: (turnId) =>
        // Claims by their turn index; handled messages within the turn's conversation (by its index).
        sql<{ one: number }>`SELECT 1 AS one FROM messages
            WHERE id IN (SELECT message_id FROM delivery_claims WHERE turn_id = ${turnId}) AND direction = 'in' AND sender <> 'schedule'
          UNION ALL SELECT 1 AS one FROM messages
            WHERE conversation_id = (SELECT conversation_id FROM turns WHERE id = ${turnId}) AND handled_by = ${turnId} AND direction = 'in' AND sender <> 'schedule'
          LIMIT 1`.pipe(Effect.map((r) => r.length > 0), Effect.orDie)
    })
  })

  static readonly layer = Layer.effect(TaskStore, TaskStore.make)
}
