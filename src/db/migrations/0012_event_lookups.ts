import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { jsonField } from "../dialect.js"

/**
 * The event log is read by conversation and by turn (`pynchy trace`) and pruned by age
 * (`observers.retainDays`): an index for each. The ids are in the JSON payload; an index on the
 * same expression the queries use serves them without new columns.
 */
export const m0012_event_lookups = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX events_at ON events (at)`
  yield* sql`CREATE INDEX events_conversation ON events (${jsonField(sql, "payload", "conversationId")})`
  yield* sql`CREATE INDEX events_turn ON events (${jsonField(sql, "payload", "turnId")})`
})
