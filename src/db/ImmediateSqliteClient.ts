import * as Reactivity from "@effect/experimental/Reactivity"
import { SqlClient, SqlError, Statement } from "@effect/sql"
import type { Connection } from "@effect/sql/SqlConnection"
import { Context, Deferred, Duration, Effect, Exit, Layer, Option, Scope, Stream } from "effect"
import { createRequire } from "node:module"
import { type Program, type Step, Transactions } from "./Transactions.js"
import * as WalCheckpointer from "./wal-checkpointer.js"

/** The better-sqlite3 calls this client makes (the package ships no types). */
interface BetterStatement {
  readonly reader: boolean
  all(...params: ReadonlyArray<unknown>): Array<unknown>
  get(...params: ReadonlyArray<unknown>): unknown
  run(...params: ReadonlyArray<unknown>): { readonly changes: number; readonly lastInsertRowid: number | bigint }
  raw(on: boolean): BetterStatement
}
interface BetterDatabase {
  prepare(sql: string): BetterStatement
  pragma(sql: string): unknown
  transaction<A>(f: () => A): { immediate(): A }
  close(): void
}
const Sqlite = createRequire(import.meta.url)("better-sqlite3") as new (file: string, options: { readonly readonly: boolean }) => BetterDatabase

/**
 * The options of `@effect/sql-sqlite-node` 0.53.0's `SqliteClientConfig` (the version this client
 * tracks), plus `busyTimeout`. Upstream sets only WAL; this client also sets busy_timeout,
 * synchronous=NORMAL and foreign keys at open.
 */
export interface ImmediateSqliteClientConfig {
  readonly filename: string
  readonly readonly?: boolean | undefined
  /** Prepared statements kept, least recently used dropped first. Default 200 (upstream's). */
  readonly prepareCacheSize?: number | undefined
  /** A cached statement unused this long is prepared again. Default 10 minutes (upstream's). */
  readonly prepareCacheTTL?: Duration.DurationInput | undefined
  readonly disableWAL?: boolean | undefined
  readonly spanAttributes?: Record<string, unknown> | undefined
  readonly transformResultNames?: ((str: string) => string) | undefined
  readonly transformQueryNames?: ((str: string) => string) | undefined
  /** How long a writer waits for another process's write lock. Default 5 s. */
  readonly busyTimeout?: Duration.DurationInput | undefined
  /**
   * WAL checkpoints in a worker thread instead of inside the commit that fills the WAL
   * (wal-checkpointer.ts): for the long-lived host, not for one-shot clients. Default false.
   */
  readonly backgroundCheckpoints?: boolean | undefined
}

/**
 * A bounded LRU of prepared statements (a Map keeps insertion order: a hit moves to the end),
 * recency kept to the millisecond: a hit already moved this millisecond stays where it is (a
 * transaction's statements alternate hundreds of times a millisecond).
 */
const statementCache = (db: BetterDatabase, size: number, ttlMillis: number, now: () => number) => {
  const entries = new Map<string, { readonly statement: BetterStatement; used: number }>()
  return (sql: string): BetterStatement => {
    const at = now()
    const hit = entries.get(sql)
    if (hit !== undefined) {
      if (hit.used === at) return hit.statement
      entries.delete(sql)
      if (at - hit.used <= ttlMillis) {
        hit.used = at
        entries.set(sql, hit)
        return hit.statement
      }
    }
    const statement = db.prepare(sql)
    if (size > 0) {
      entries.set(sql, { statement, used: at })
      if (entries.size > size) entries.delete(entries.keys().next().value!)
    }
    return statement
  }
}

const failed = (cause: unknown, message = "Failed to execute statement") => new SqlError.SqlError({ cause, message })

/**
 * A SqlClient over one better-sqlite3 connection, in place of `@effect/sql-sqlite-node` (whose
 * options it mirrors) for one reason: write transactions begin IMMEDIATE. A deferred BEGIN that
 * reads and then writes fails at once with SQLITE_BUSY (no busy wait) when another process (`pynchy
 * send`, the MCP server) committed in between; IMMEDIATE takes the write lock first, under
 * busy_timeout. It also runs `Transactions` programs synchronously, the path the hot transactions use.
 */
export const make = (options: ImmediateSqliteClientConfig) =>
  Effect.gen(function* () {
    const { filename } = options
    const db = yield* Effect.acquireRelease(
      Effect.try({
        try: () => {
          const d = new Sqlite(filename, { readonly: options.readonly ?? false })
          d.pragma(`busy_timeout = ${Duration.toMillis(options.busyTimeout ?? Duration.seconds(5))}`)
          if (options.disableWAL !== true) d.pragma("journal_mode = WAL")
          d.pragma("synchronous = NORMAL")
          d.pragma("foreign_keys = ON")
          return d
        },
        catch: (cause) => failed(cause, `cannot open ${filename}: ${cause instanceof Error ? cause.message : String(cause)}`)
      }),
      (d) => Effect.sync(() => d.close())
    )
    const background = options.backgroundCheckpoints === true && options.readonly !== true && options.disableWAL !== true && filename !== ":memory:"
    const { wrote } = background ? yield* WalCheckpointer.start(db, filename) : { wrote: () => {} }
    const clock = yield* Effect.clock
    const statement = statementCache(
      db,
      options.prepareCacheSize ?? 200,
      Duration.toMillis(options.prepareCacheTTL ?? Duration.minutes(10)),
      () => clock.unsafeCurrentTimeMillis()
    )

    const run = (sql: string, params: ReadonlyArray<unknown>, raw: boolean) =>
      Effect.try({
        try: () => {
          const s = statement(sql)
          if (s.reader) return s.all(...params)
          const result = s.run(...params)
          wrote()
          return raw ? result : []
        },
        catch: (cause) => failed(cause)
      })
    const rows = (sql: string, params: ReadonlyArray<unknown>, transformRows: (<A extends object>(rows: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined) =>
      Effect.map(run(sql, params, false), (r) => (transformRows ? transformRows(r as Array<object>) : r) as ReadonlyArray<unknown>)

    const connection: Connection = {
      execute: rows,
      executeRaw: (sql, params) => run(sql, params, true),
      executeValues: (sql, params) =>
        Effect.try({
          try: () => {
            const s = statement(sql)
            if (!s.reader) {
              s.run(...params)
              wrote()
              return []
            }
            try {
              return s.raw(true).all(...params) as Array<Array<unknown>>
            } finally {
              s.raw(false)
            }
          },
          catch: (cause) => failed(cause)
        }),
      executeUnprepared: rows,
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
    const transformRows = options.transformResultNames ? Statement.defaultTransforms(options.transformResultNames).array : undefined
    const client = yield* SqlClient.make({
      acquirer,
      transactionAcquirer,
      compiler: Statement.makeCompilerSqlite(options.transformQueryNames),
      beginTransaction: "BEGIN IMMEDIATE",
      spanAttributes: [...Object.entries(options.spanAttributes ?? {}), ["db.system.name", "sqlite"]],
      ...(transformRows ? { transformRows } : {})
    })

    // A program's statements run synchronously: each step is a prepared better-sqlite3 call.
    const step = (s: Step): unknown => {
      switch (s.op) {
        case "all":
          return statement(s.sql).all(...s.params)
        case "get":
          return statement(s.sql).get(...s.params)
        case "run":
          return statement(s.sql).run(...s.params).changes
        case "insert":
          return Number(statement(s.sql).run(...s.params).lastInsertRowid)
        case "lock":
          return true
      }
    }
    const drive = <A>(program: Program<A>): A => {
      let r = program.next()
      while (!r.done) r = program.next(step(r.value))
      return r.value
    }
    // better-sqlite3 nests a transaction opened inside another as a savepoint.
    const runSync = <A>(f: () => A) =>
      Effect.try({
        try: () => {
          const result = db.transaction(f).immediate()
          wrote()
          return result
        },
        catch: (cause) => failed(cause, "synchronous transaction failed")
      })
    // Not an optional dependency: the probe @effect/sql's own withTransaction makes to tell
    // whether this fiber is inside a transaction (then it already holds the connection).
    const inTransaction = Effect.map(Effect.serviceOption(SqlClient.TransactionConnection), Option.isSome)
    const transaction = <A>(program: () => Program<A>) => {
      const f = () => drive(program())
      return Effect.flatMap(inTransaction, (open) => open ? runSync(f) : semaphore.withPermits(1)(runSync(f)))
    }

    type Grouped = { readonly f: () => unknown; readonly done: Deferred.Deferred<unknown, SqlError.SqlError> }
    let group: Array<Grouped> = []
    const commitGroup = Effect.suspend(() => {
      const batch = group
      group = []
      return semaphore.withPermits(1)(runSync(() => batch.map((g) => {
        try {
          return Exit.succeed(db.transaction(g.f).immediate())
        } catch (cause) {
          return Exit.fail(failed(cause))
        }
      }))).pipe(
        Effect.matchEffect({
          onFailure: (error) => Effect.forEach(batch, (g) => Deferred.fail(g.done, error), { discard: true }),
          onSuccess: (exits) => Effect.forEach(batch, (g, i) => Deferred.done(g.done, exits[i]!), { discard: true })
        })
      )
    })
    const grouped = <A>(program: () => Program<A>): Effect.Effect<A, SqlError.SqlError> =>
      Effect.flatMap(inTransaction, (open) => {
        const f = () => drive(program())
        if (open) return runSync(f)
        return Effect.flatMap(Deferred.make<unknown, SqlError.SqlError>(), (done) => {
          group.push({ f, done })
          // The first caller commits for all; it cannot be interrupted between, so none is left waiting.
          const lead = group.length === 1 ? Effect.uninterruptible(Effect.zipRight(Effect.yieldNow(), commitGroup)) : Effect.void
          return Effect.zipRight(lead, Deferred.await(done)) as Effect.Effect<A, SqlError.SqlError>
        })
      })
    const transactions = Transactions.of({ transaction, grouped })
    return { client, transactions }
  })

/** SqlClient and Transactions on one SQLite file (or `:memory:`). */
export const layer = (options: ImmediateSqliteClientConfig): Layer.Layer<SqlClient.SqlClient | Transactions, SqlError.SqlError> =>
  Layer.scopedContext(
    Effect.map(make(options), ({ client, transactions }) =>
      Context.make(SqlClient.SqlClient, client).pipe(Context.add(Transactions, transactions)))
  ).pipe(Layer.provide(Reactivity.layer))
