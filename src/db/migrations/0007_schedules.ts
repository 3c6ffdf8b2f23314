import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { ddl } from "../dialect.js"

/**
 * Scheduled work (docs/schedules.md). A row per workspace schedule (`ws:<workspace>`) or agent
 * task, with its next due time stored; a run per (task, due time), written in the same
 * transaction as the message it queues, so a due time runs once however the host dies.
 */
export const m0007_schedules = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* ddl`CREATE TABLE scheduled_tasks (
    id TEXT PRIMARY KEY,
    workspace TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('schedule', 'task')),
    conversation_id TEXT NOT NULL,
    connection TEXT NOT NULL,
    place TEXT NOT NULL,
    prompt TEXT NOT NULL,
    cron TEXT,
    timezone TEXT,
    every_ms INTEGER,
    anchor INTEGER,
    at INTEGER,
    catch_up_ms INTEGER NOT NULL,
    notify_skipped INTEGER NOT NULL DEFAULT 0,
    pause_after_ms INTEGER,
    daily_tokens INTEGER,
    definition TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('active', 'done', 'cancelled')),
    paused_at INTEGER,
    next_due INTEGER,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
  )`
  // The timer's only lookup: the earliest due time of an active task.
  yield* sql`CREATE INDEX scheduled_tasks_due ON scheduled_tasks (next_due) WHERE status = 'active'`
  yield* sql`CREATE INDEX scheduled_tasks_workspace ON scheduled_tasks (workspace, status)`
  yield* ddl`CREATE TABLE task_runs (
    task_id TEXT NOT NULL REFERENCES scheduled_tasks(id),
    due_at INTEGER NOT NULL,
    outcome TEXT NOT NULL CHECK (outcome IN ('queued', 'delivered', 'quiet', 'failed', 'skipped')),
    message_id INTEGER REFERENCES messages(id),
    turn_id INTEGER REFERENCES turns(id),
    skipped_through INTEGER,
    created_at INTEGER NOT NULL,
    finished_at INTEGER,
    PRIMARY KEY (task_id, due_at)
  ) WITHOUT ROWID`
  yield* sql`CREATE INDEX task_runs_message ON task_runs (message_id) WHERE message_id IS NOT NULL`
})
