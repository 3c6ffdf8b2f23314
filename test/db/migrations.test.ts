/**
 * Migrations that carry data forward: a database from before a migration, upgraded by it.
 */
import { SqlClient } from "@effect/sql"
import * as Migrator from "@effect/sql/Migrator"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { ConnectionName, ConversationId, WorkspaceId } from "../../src/domain/ids.js"
import { MessageStore } from "../../src/db/MessageStore.js"
import { migrations } from "../../src/db/migrations.js"
import * as SqliteClient from "../../src/db/ImmediateSqliteClient.js"

const migrateUpTo = (below: string) =>
  Migrator.make({})({
    loader: Migrator.fromRecord(Object.fromEntries(Object.entries(migrations).filter(([id]) => id < below))),
    table: "pynchy_migrations"
  })
const migrateAll = Migrator.make({})({ loader: Migrator.fromRecord(migrations), table: "pynchy_migrations" })

describe("migration 0004_receipt_fingerprint", () => {
  it.effect("moves the HTTP API's body digests from cursors onto their receipts and drops those cursors", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* migrateUpTo("0004")
      // What the cursor-based version wrote: a keyed POST's receipt with its digest as a cursor, an
      // unkeyed POST, and a real provider cursor that must stay.
      yield* sql`INSERT INTO conversations (id, connection, place, workspace, created_at) VALUES ('web:a', 'web', 'a', 'main', 0)`
      yield* sql`INSERT INTO messages (id, conversation_id, direction, sender, text, created_at) VALUES (1, 'web:a', 'in', 'me', 'hello', 0), (2, 'web:a', 'in', 'me', 'unkeyed', 0)`
      yield* sql`INSERT INTO receipts (connection, provider_event_id, message_id) VALUES ('web', 'key:abc', 1), ('web', 'anon:1', 2)`
      yield* sql`INSERT INTO cursors (connection, stream, position, ord, updated_at) VALUES ('web', 'key:abc', 'digest-1', 1, 0), ('web', 'since', 's42', 42, 0)`
      yield* migrateAll
      const receipts = yield* sql<{ e: string; f: string | null }>`SELECT provider_event_id AS e, fingerprint AS f FROM receipts ORDER BY e`
      assert.deepStrictEqual(receipts.map((r) => [r.e, r.f]), [["anon:1", null], ["key:abc", "digest-1"]])
      const cursors = yield* sql<{ stream: string }>`SELECT stream FROM cursors`
      assert.deepStrictEqual(cursors.map((c) => c.stream), ["since"])
      // The carried digest is a fingerprint like any other: another body under that key conflicts.
      const store = yield* MessageStore
      const row = { conversationId: ConversationId.make("web:a"), connection: ConnectionName.make("web"), place: "a", workspace: WorkspaceId.make("main"), providerEventId: "key:abc", sender: "me", metadata: {} }
      const [again] = yield* store.ingestBatch([{ ...row, text: "hello", fingerprint: "digest-1" }])
      const [reused] = yield* store.ingestBatch([{ ...row, text: "changed", fingerprint: "digest-2" }])
      assert.deepStrictEqual([again!.duplicate, again!.conflict, reused!.conflict, reused!.messageId], [true, false, true, 1])
      assert.isTrue(Option.isSome(yield* store.cursor(ConnectionName.make("web"), "since")))
    }).pipe(Effect.provide(Layer.provideMerge(MessageStore.layer, SqliteClient.layer({ filename: ":memory:" })))))
})
