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

describe("migration 0010_turn_blocked", () => {
  it.effect("rebuilds turns with `blocked`: earlier blocked turns move there, every row and reference survives, the checks still hold", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* migrateUpTo("0010")
      // A conversation with a finished turn, a turn that ended waiting on a human (as the earlier
      // build stored it), a failed one, and a running one still holding a claim and a delivery.
      yield* sql`INSERT INTO conversations (id, connection, place, workspace, created_at) VALUES ('test:a', 'test', 'a', 'main', 0)`
      yield* sql`INSERT INTO turns (id, conversation_id, status, attempts, error, created_at, updated_at) VALUES
        (1, 'test:a', 'completed', 1, NULL, 0, 1), (2, 'test:a', 'completed', 1, 'blocked:needs_permission', 0, 2),
        (3, 'test:a', 'failed', 3, 'turn_timeout: slow', 0, 3), (4, 'test:a', 'running', 1, NULL, 0, 4)`
      yield* sql`INSERT INTO messages (id, conversation_id, direction, sender, text, created_at, handled_by) VALUES
        (1, 'test:a', 'in', 'u', 'one', 0, 1), (2, 'test:a', 'in', 'u', 'two', 0, 2), (3, 'test:a', 'in', 'u', 'three', 0, NULL)`
      yield* sql`INSERT INTO delivery_claims (message_id, turn_id) VALUES (3, 4)`
      yield* sql`INSERT INTO deliveries (idempotency_key, conversation_id, turn_id, kind, text, status, created_at, updated_at)
        VALUES ('t2:blocked', 'test:a', 2, 'notice', 'waiting', 'sent', 0, 0)`
      yield* migrateAll

      const turns = yield* sql<{ id: number; status: string; error: string | null }>`SELECT id, status, error FROM turns ORDER BY id`
      assert.deepStrictEqual(turns.map((t) => [t.id, t.status, t.error]), [
        [1, "completed", null], [2, "blocked", "needs_permission"], [3, "failed", "turn_timeout: slow"], [4, "running", null]
      ])
      assert.deepStrictEqual(yield* sql`PRAGMA foreign_key_check`, [])
      const handled = yield* sql<{ id: number; by: number | null }>`SELECT id, handled_by AS by FROM messages ORDER BY id`
      assert.deepStrictEqual(handled.map((m) => [m.id, m.by]), [[1, 1], [2, 2], [3, null]])
      // The references and the checks are live on the new table.
      const refused = (effect: Effect.Effect<unknown, unknown>) => Effect.map(Effect.either(effect), (e) => e._tag === "Left")
      assert.isTrue(yield* refused(sql`DELETE FROM turns WHERE id = 4`), "a turn holding a claim cannot be deleted")
      assert.isTrue(yield* refused(sql`INSERT INTO turns (conversation_id, status, created_at, updated_at) VALUES ('test:a', 'paused', 0, 0)`))
      assert.isTrue(yield* refused(sql`INSERT INTO turns (conversation_id, status, created_at, updated_at) VALUES ('test:a', 'queued', 0, 0)`), "one active turn per conversation")
      const indexes = yield* sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'turns' ORDER BY name`
      // 0001's two, rebuilt by 0010, and 0013's lookups.
      assert.deepStrictEqual(indexes.map((i) => i.name), ["turns_blocked", "turns_conversation", "turns_failed", "turns_one_active", "turns_status"])
      const next = yield* sql<{ id: number }>`INSERT INTO turns (conversation_id, status, created_at, updated_at) VALUES ('test:a', 'blocked', 0, 0) RETURNING id`
      assert.strictEqual(next[0]!.id, 5)
    }).pipe(Effect.provide(SqliteClient.layer({ filename: ":memory:" })), Effect.orDie))
})
