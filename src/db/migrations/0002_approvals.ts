import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { ddl } from "../dialect.js"

/**
 * Human approvals of high-risk host actions. A request is keyed by (turn, action, input digest),
 * so a rerun of the same turn asking the same thing finds the earlier decision.
 */
export const m0002_approvals = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* ddl`CREATE TABLE approvals (
    id TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL,
    turn_id INTEGER,
    action TEXT NOT NULL,
    input_digest TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'expired')),
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    decided_at INTEGER,
    decided_by TEXT${{ sqlite: "", pg: ",\n    rowid BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE" }}
  )`
  yield* sql`CREATE UNIQUE INDEX approvals_request ON approvals (turn_id, action, input_digest)`
})
