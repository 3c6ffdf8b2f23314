import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Reads that must not grow with history (`pynchy status` after a year of chatting): a
 * conversation's turns newest first (its latest turn, `recent`), and the counts of the two final
 * statuses that are not the common one (blocked, failed), each from a small partial index;
 * completed is the rest of the turns table, which rows are only appended to.
 */
export const m0013_turn_lookups = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX turns_conversation ON turns (conversation_id, id)`
  yield* sql`CREATE INDEX turns_blocked ON turns (conversation_id) WHERE status = 'blocked'`
  yield* sql`CREATE INDEX turns_failed ON turns (conversation_id) WHERE status = 'failed'`
})
