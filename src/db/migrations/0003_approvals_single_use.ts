import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { ddl } from "../dialect.js"

/**
 * Approvals become single-use and bound to the turn's attempt. A new status, `consumed`, is set
 * by one compare-and-set when the approved action runs; `attempt` is the turn's attempt count
 * when the request was made, so a retry of the turn never finds an earlier attempt's approval.
 * SQLite cannot alter a CHECK, so the table is rebuilt. Rows from before carry no attempt and
 * therefore never match again (fail closed).
 */
export const m0003_approvals_single_use = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* ddl`CREATE TABLE approvals_single_use (
    id TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL,
    turn_id INTEGER,
    attempt INTEGER,
    action TEXT NOT NULL,
    input_digest TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'expired', 'consumed')),
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    decided_at INTEGER,
    decided_by TEXT,
    consumed_at INTEGER${{ sqlite: "", pg: ",\n    rowid BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE" }}
  )`
  yield* sql`INSERT INTO approvals_single_use (id, conversation_id, turn_id, attempt, action, input_digest, status, created_at, expires_at, decided_at, decided_by)
    SELECT id, conversation_id, turn_id, NULL, action, input_digest, status, created_at, expires_at, decided_at, decided_by FROM approvals`
  yield* sql`DROP TABLE approvals`
  yield* sql`ALTER TABLE approvals_single_use RENAME TO approvals`
  // At most one open (pending or approved, not yet used) request per attempt, action and input;
  // decided, expired and consumed rows are history.
  yield* sql`CREATE UNIQUE INDEX approvals_open ON approvals (turn_id, attempt, action, input_digest) WHERE status IN ('pending', 'approved')`
  yield* sql`CREATE INDEX approvals_request ON approvals (turn_id, attempt, action, input_digest)`
})
