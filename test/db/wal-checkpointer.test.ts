import { assert, describe, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import * as SqliteClient from "../../src/db/ImmediateSqliteClient.js"
import * as WalCheckpointer from "../../src/db/wal-checkpointer.js"
import { eventually } from "../support/eventually.js"
import { tempDir } from "../support/temp.js"

const Sqlite = createRequire(import.meta.url)("better-sqlite3")

// About 600 pages of rows: fewer than SQLite's own threshold (1,000), so without the worker the
// connection never checkpoints them and the database file keeps only its first pages.
const ROWS = 2_400
const ROW = "x".repeat(1_000)

const fill = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)`
  yield* sql.withTransaction(Effect.forEach(Array.from({ length: ROWS }, (_, i) => i), (i) => sql`INSERT INTO t (id, v) VALUES (${i}, ${ROW})`, { discard: true }))
})

const pagesOnDisk = (file: string) => Math.floor(fs.statSync(file).size / 4096)

describe("WAL checkpoints in a worker thread", () => {
  it.scoped("the host's connection leaves checkpoints to the worker, which copies the WAL back soon after the writes", () =>
    Effect.gen(function* () {
      const file = path.join(tempDir(), "wal.db")
      const autocheckpoint = yield* Effect.provide(
        Effect.gen(function* () {
          yield* fill
          const pages = yield* eventually(() => (pagesOnDisk(file) >= 500 ? pagesOnDisk(file) : undefined), { label: "the worker's checkpoint to copy the rows into the database file" })
          assert.isAtLeast(pages, 500)
          const sql = yield* SqlClient.SqlClient
          return (yield* sql<{ wal_autocheckpoint: number }>`PRAGMA wal_autocheckpoint`)[0]!.wal_autocheckpoint
        }),
        SqliteClient.layer({ filename: file, backgroundCheckpoints: true })
      )
      // The connection's own threshold is only the backstop.
      assert.strictEqual(autocheckpoint, WalCheckpointer.BACKSTOP_PAGES)
      // The worker closed its connection before the host's closed: the last close removed the WAL.
      assert.isFalse(fs.existsSync(`${file}-wal`))
    }))

  it.scoped("without the worker (a one-shot client) the same writes stay in the WAL until the connection closes", () =>
    Effect.gen(function* () {
      const file = path.join(tempDir(), "wal.db")
      const pages = yield* Effect.provide(
        Effect.zipRight(fill, Effect.sync(() => pagesOnDisk(file))),
        Layer.fresh(SqliteClient.layer({ filename: file }))
      )
      assert.isBelow(pages, 100)
    }))

  it.scoped("a worker that cannot open the database puts the checkpoints back on the connection", () =>
    Effect.gen(function* () {
      const db = new Sqlite(path.join(tempDir(), "main.db"))
      yield* Effect.addFinalizer(() => Effect.sync(() => db.close()))
      yield* WalCheckpointer.start(db, path.join(tempDir(), "no-such-dir", "x.db"), { startAfterWrites: 0 })
      const pages = yield* eventually(() => {
        const n = db.pragma("wal_autocheckpoint", { simple: true }) as number
        return n === WalCheckpointer.DEFAULT_PAGES ? n : undefined
      }, { label: "the connection's wal_autocheckpoint to return to SQLite's default" })
      assert.strictEqual(pages, WalCheckpointer.DEFAULT_PAGES)
    }))
})
