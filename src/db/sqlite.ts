import * as Reactivity from "@effect/experimental/Reactivity"
import { SqlClient, SqlError, Statement } from "@effect/sql"
import type { Connection } from "@effect/sql/SqlConnection"
import { Effect, Layer, Scope, Stream } from "effect"
import { createRequire } from "node:module"

/** The few better-sqlite3 calls this client makes (the package ships no types). */
interface BetterStatement {
  readonly reader: boolean
  all(...params: ReadonlyArray<unknown>): Array<unknown>
  run(...params: ReadonlyArray<unknown>): unknown
  raw(on: boolean): BetterStatement
}
interface BetterDatabase {
  prepare(sql: string): BetterStatement
  pragma(sql: string): unknown
  close(): void
}
const Sqlite = createRequire(import.meta.url)("better-sqlite3") as new (file: string) => BetterDatabase

/**
 * A SqlClient over one better-sqlite3 connection, in place of @effect/sql-sqlite-node for one
 * reason that matters: write transactions start with `BEGIN IMMEDIATE`. A deferred BEGIN that reads
 * and then writes fails at once with SQLITE_BUSY (no busy wait) when another process — `pynchy
 * send`, the MCP server — committed in between; IMMEDIATE takes the write lock first, under
 * busy_timeout. Pragmas are set at open: WAL, synchronous=NORMAL, foreign keys, busy_timeout.
 */
export const make = (filename: string) =>
  Effect.gen(function* () {
    const db = yield* Effect.acquireRelease(
      Effect.try({
        try: () => {
          const d = new Sqlite(filename)
          d.pragma("busy_timeout = 5000")
          d.pragma("journal_mode = WAL")
          d.pragma("synchronous = NORMAL")
          d.pragma("foreign_keys = ON")
          return d
        },
        catch: (cause) => new SqlError.SqlError({ cause, message: `cannot open ${filename}: ${cause instanceof Error ? cause.message : String(cause)}` })
      }),
      (d) => Effect.sync(() => d.close())
    )

    // Statements are few and their text constant (batches go through json_each), so a plain map suffices.
    const prepared = new Map<string, BetterStatement>()
    const statement = (sql: string) => {
      let s = prepared.get(sql)
      if (s === undefined) {
        s = db.prepare(sql)
        if (prepared.size < 500) prepared.set(sql, s)
      }
      return s
    }
    const run = (sql: string, params: ReadonlyArray<unknown>, raw: boolean) =>
      Effect.try({
        try: () => {
          const s = statement(sql)
          if (s.reader) return s.all(...params)
          const result = s.run(...params)
          return raw ? result : []
        },
        catch: (cause) => new SqlError.SqlError({ cause, message: "Failed to execute statement" })
      })

    const connection: Connection = {
      execute: (sql, params, transformRows) =>
        Effect.map(run(sql, params, false), (rows) => (transformRows ? transformRows(rows as Array<object>) : rows) as ReadonlyArray<unknown>),
      executeRaw: (sql, params) => run(sql, params, true),
      executeValues: (sql, params) =>
        Effect.try({
          try: () => {
            const s = statement(sql)
            if (!s.reader) {
              s.run(...params)
              return []
            }
            try {
              return s.raw(true).all(...params) as Array<Array<unknown>>
            } finally {
              s.raw(false)
            }
          },
          catch: (cause) => new SqlError.SqlError({ cause, message: "Failed to execute statement" })
        }),
      executeUnprepared: (sql, params, transformRows) =>
        Effect.map(run(sql, params, false), (rows) => (transformRows ? transformRows(rows as Array<object>) : rows) as ReadonlyArray<unknown>),
      executeStream: () => Stream.dieMessage("executeStream is not supported")
    }

    // One connection: a transaction holds it, so other fibers wait for the permit, not for SQLite.
    const semaphore = yield* Effect.makeSemaphore(1)
    const acquirer = semaphore.withPermits(1)(Effect.succeed(connection))
    const transactionAcquirer = Effect.uninterruptibleMask((restore) =>
      Effect.as(
        Effect.zipRight(restore(semaphore.take(1)), Effect.tap(Effect.scope, (scope) => Scope.addFinalizer(scope, semaphore.release(1)))),
        connection
      )
    )
    return yield* SqlClient.make({
      acquirer,
      transactionAcquirer,
      compiler: Statement.makeCompilerSqlite(),
      beginTransaction: "BEGIN IMMEDIATE",
      spanAttributes: [["db.system.name", "sqlite"]]
    })
  })

/** SqlClient on a SQLite file (or `:memory:`). */
export const layer = (filename: string) =>
  Layer.scoped(SqlClient.SqlClient, make(filename)).pipe(Layer.provide(Reactivity.layer))
