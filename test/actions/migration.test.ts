/** Migration 0003: approvals from before single use survive the rebuild and can never be used again. */
import { SqlClient } from "@effect/sql"
import * as Migrator from "@effect/sql/Migrator"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { ApprovalStore } from "../../src/actions/ApprovalStore.js"
import { migrations } from "../../src/db/migrations.js"
import { TurnId } from "../../src/domain/ids.js"
import * as SqliteClient from "../../src/db/ImmediateSqliteClient.js"

const migrateTo = (keys: ReadonlyArray<keyof typeof migrations>) =>
  Migrator.make({})({
    loader: Migrator.fromRecord(Object.fromEntries(keys.map((k) => [k, migrations[k]]))),
    table: "pynchy_migrations"
  })

describe("migration 0003_approvals_single_use", () => {
  it.scoped("an approved row from 0002 is kept, bound to no attempt, and cannot be consumed", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* migrateTo(["0001_initial", "0002_approvals"])
      yield* sql`INSERT INTO conversations (id, connection, place, workspace, created_at) VALUES ('test:room', 'test', 'room', 'main', 0)`
      yield* sql`INSERT INTO turns (id, conversation_id, status, attempts, created_at, updated_at) VALUES (7, 'test:room', 'running', 1, 0, 0)`
      yield* sql`INSERT INTO approvals (id, conversation_id, turn_id, action, input_digest, status, created_at, expires_at, decided_at, decided_by)
        VALUES ('old001', 'test:room', 7, 'db.drop', 'd', 'approved', 0, 999999999, 1, 'u')`
      yield* migrateTo(Object.keys(migrations) as Array<keyof typeof migrations>)

      const store = yield* ApprovalStore.make
      const row = yield* store.get("old001")
      assert.deepStrictEqual(Option.map(row, (r) => [r.status, r.attempt, r.consumedAt]).pipe(Option.getOrNull), ["approved", null, null])
      assert.isTrue(Option.isNone(yield* store.find(TurnId.make(7), "db.drop", "d")), "an unbound row answers no request")
      assert.isFalse(yield* store.consume("old001", 2))
      // The new CHECK admits `consumed`; the open-request index is in place.
      const indexes = yield* sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'approvals' ORDER BY name`
      assert.deepStrictEqual(indexes.map((i) => i.name).filter((n) => !n.startsWith("sqlite_")), ["approvals_open", "approvals_request"])
    }).pipe(Effect.provide(SqliteClient.layer({ filename: ":memory:" })), Effect.orDie))
})
