import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Spend of scheduled work (docs/schedules.md): why a run was skipped or failed, and whether a
 * turn recorded a reply, read when its end settles its scheduled runs in the same transaction;
 * the paused schedules of a conversation, resumed by a user's message. (A turn's gateway usage is
 * found through 0012's events_turn index.)
 */
export const m0011_schedule_spend = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE task_runs ADD COLUMN reason TEXT`
  yield* sql`CREATE INDEX deliveries_turn_replies ON deliveries (turn_id) WHERE kind = 'reply'`
  // A user's message resumes the paused schedules of its conversation.
  yield* sql`CREATE INDEX scheduled_tasks_paused ON scheduled_tasks (conversation_id) WHERE paused_at IS NOT NULL`
})
