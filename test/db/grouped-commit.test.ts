/**
 * `Transactions.grouped` on SQLite: transactions asked for by fibers in the same scheduler turn share
 * one commit, each in its own savepoint, so one caller's throw rolls back only its own writes.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import * as SqliteClient from "../../src/db/ImmediateSqliteClient.js"
import * as Tx from "../../src/db/Transactions.js"

const layer = SqliteClient.layer({ filename: ":memory:" })

describe("Transactions.grouped on SQLite", () => {
  it.effect("concurrent callers: a throw fails only its caller and undoes only its own writes", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const { grouped } = yield* Tx.Transactions
      yield* sql`CREATE TABLE t (n INTEGER NOT NULL)`
      const write = (n: number) =>
        grouped(function* () {
          yield* Tx.run("INSERT INTO t (n) VALUES (?)", n)
          if (n === 3) throw new Error("caller 3 fails")
          return n
        })
      const exits = yield* Effect.forEach([1, 2, 3, 4], (n) => Effect.exit(write(n)), { concurrency: "unbounded" })
      assert.deepStrictEqual(exits.map(Exit.isSuccess), [true, true, false, true])
      const rows = yield* sql<{ n: number }>`SELECT n FROM t ORDER BY n`
      assert.deepStrictEqual(rows.map((r) => r.n), [1, 2, 4])
    }).pipe(Effect.provide(layer)))

  it.effect("many callers at once: every write is committed and every caller gets its own answer", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const { grouped } = yield* Tx.Transactions
      yield* sql`CREATE TABLE u (n INTEGER PRIMARY KEY)`
      const ids = yield* Effect.forEach(Array.from({ length: 50 }, (_, i) => i), (n) =>
        grouped(() => Tx.insert("INSERT INTO u (n) VALUES (?)", n)), { concurrency: "unbounded" })
      assert.deepStrictEqual(ids, Array.from({ length: 50 }, (_, i) => i))
      const [count] = yield* sql<{ n: number }>`SELECT COUNT(*) AS n FROM u`
      assert.strictEqual(count!.n, 50)
    }).pipe(Effect.provide(layer)))

  it.effect("inside withTransaction it joins that transaction (rolled back with it)", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const { grouped } = yield* Tx.Transactions
      yield* sql`CREATE TABLE v (n INTEGER NOT NULL)`
      const exit = yield* sql.withTransaction(Effect.zipRight(grouped(() => Tx.run("INSERT INTO v (n) VALUES (1)")), Effect.fail("abort"))).pipe(Effect.exit)
      assert.isTrue(Exit.isFailure(exit))
      const [count] = yield* sql<{ n: number }>`SELECT COUNT(*) AS n FROM v`
      assert.strictEqual(count!.n, 0)
    }).pipe(Effect.provide(layer)))
})
