import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/** On Postgres a CHECK is altered in place (the table keeps its rows and the references to it). */
const onPostgres = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE turns DROP CONSTRAINT turns_status_check`
  yield* sql`ALTER TABLE turns ADD CONSTRAINT turns_status_check CHECK (status IN ('queued', 'running', 'completed', 'blocked', 'failed', 'interrupted'))`
  yield* sql`UPDATE turns SET status = 'blocked', error = substr(error, 9) WHERE status = 'completed' AND error LIKE 'blocked:%'`
})

const onSqlite = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`PRAGMA defer_foreign_keys = ON`
  yield* sql`CREATE TEMP TABLE turns_0010 AS SELECT * FROM turns`
  yield* sql`DROP TABLE turns`
  yield* sql`CREATE TABLE turns (
    id INTEGER PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations(id),
    status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'blocked', 'failed', 'interrupted')),
    attempts INTEGER NOT NULL DEFAULT 0,
    owner_epoch TEXT,
    executor_id TEXT,
    not_before INTEGER NOT NULL DEFAULT 0,
    error TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
  )`
  yield* sql`INSERT INTO turns (id, conversation_id, status, attempts, owner_epoch, executor_id, not_before, error, created_at, updated_at)
    SELECT id, conversation_id,
      CASE WHEN status = 'completed' AND error LIKE 'blocked:%' THEN 'blocked' ELSE status END,
      attempts, owner_epoch, executor_id, not_before,
      CASE WHEN status = 'completed' AND error LIKE 'blocked:%' THEN substr(error, 9) ELSE error END,
      created_at, updated_at
    FROM temp.turns_0010`
  yield* sql`DROP TABLE temp.turns_0010`
  // As in 0001: at most one active turn per conversation; the queue's scan of active turns.
  yield* sql`CREATE UNIQUE INDEX turns_one_active ON turns (conversation_id) WHERE status IN ('queued', 'running', 'interrupted')`
  yield* sql`CREATE INDEX turns_status ON turns (status) WHERE status IN ('queued', 'running', 'interrupted')`
})

/**
 * `blocked` becomes a turn status of its own (a delegated turn that ended waiting on a human was
 * stored as `completed` with `error` = `blocked:<state>`; those rows move to `blocked` with the
 * state in `error`). SQLite cannot alter a CHECK, so the table is rebuilt. Other tables reference
 * `turns` and the migrations run in one transaction, where `foreign_keys` cannot be switched off:
 * the checks are deferred to the commit instead, the rows are kept aside while the table is
 * dropped and made again, and putting every row back settles the references the drop left
 * dangling (a row lost on the way would fail the commit, not pass silently).
 */
export const m0010_turn_blocked = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql.onDialectOrElse({ pg: () => onPostgres, orElse: () => onSqlite })
})
