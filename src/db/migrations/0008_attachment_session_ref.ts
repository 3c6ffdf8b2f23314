import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { jsonField } from "../dialect.js"

/**
 * Attachments carry ClawConnect's whole session ref (provider session id, host, remote url,
 * string metadata). The stored last status of an earlier build used another vocabulary
 * (`finished`, `code`, `output`): it is dropped, not guessed at; the observation token stays,
 * so the compare-and-set and the restart invariant are unchanged, and the next read refills it.
 */
export const m0008_attachment_session_ref = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE attachments ADD COLUMN provider_session_id TEXT`
  yield* sql`ALTER TABLE attachments ADD COLUMN host TEXT`
  yield* sql`ALTER TABLE attachments ADD COLUMN remote_url TEXT`
  yield* sql`ALTER TABLE attachments ADD COLUMN metadata TEXT`
  yield* sql`UPDATE attachments SET last_status = NULL WHERE last_status IS NOT NULL AND ${jsonField(sql, "last_status", "reconciledAt")} IS NULL`
})
