import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The W3C trace context (`traceparent`) of the span that ingested a message, and of the span that
 * recorded a delivery: a turn run after a retry or a restart, and a delivery resumed after one,
 * continue the trace of the message they answer (docs/observability.md). NULL for rows written
 * before this migration: they start a trace of their own.
 */
export const m0009_trace_parent = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE messages ADD COLUMN trace_parent TEXT`
  yield* sql`ALTER TABLE deliveries ADD COLUMN trace_parent TEXT`
})
