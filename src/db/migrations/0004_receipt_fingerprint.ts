import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * What a receipt stands for: the caller's digest of the message its provider event id names, so
 * the same id arriving with other content is told apart from a retry. Nullable: receipts written
 * before, and callers that pass none, are duplicates on the event id alone, as they always were.
 *
 * The HTTP API kept that digest as a cursor before (stream = the receipt's `key:<sha256>` event id,
 * order 1). Those digests move onto their receipts, so a key reused with another body is still
 * refused after the upgrade, and the cursor rows go.
 */
export const m0004_receipt_fingerprint = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE receipts ADD COLUMN fingerprint TEXT`
  yield* sql`UPDATE receipts SET fingerprint = (
      SELECT c.position FROM cursors c WHERE c.connection = receipts.connection AND c.stream = receipts.provider_event_id AND c.ord = 1
    )
    WHERE provider_event_id LIKE 'key:%'`
  yield* sql`DELETE FROM cursors WHERE stream LIKE 'key:%' AND ord = 1 AND EXISTS (
      SELECT 1 FROM receipts r WHERE r.connection = cursors.connection AND r.provider_event_id = cursors.stream
    )`
})
