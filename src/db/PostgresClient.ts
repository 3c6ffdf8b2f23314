import { SqlClient, type SqlError } from "@effect/sql"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Context, Effect, Layer, Option, type Redacted } from "effect"
import { createRequire } from "node:module"
import { type Program, type Step, Transactions } from "./Transactions.js"

/** The `pg` calls this module makes (the package ships no types). */
interface PgTypeOverrides {
  setTypeParser(oid: number, parse: (text: string) => unknown): void
}
const Pg = createRequire(import.meta.url)("pg") as { readonly TypeOverrides: new () => PgTypeOverrides }

const INT8 = 20
const NUMERIC = 1700

/**
 * Rows read the same as on SQLite: a BIGINT (ids, epoch millis, COUNT) and a NUMERIC (SUM) are
 * JavaScript numbers, not strings (every such value here is far below 2^53).
 */
const types = () => {
  const t = new Pg.TypeOverrides()
  t.setTypeParser(INT8, Number)
  t.setTypeParser(NUMERIC, Number)
  return t
}

/** The programs' statements use `?`; Postgres numbers its parameters. Converted once per text. */
const numbered = new Map<string, string>()
const toPg = (sql: string): string => {
  let text = numbered.get(sql)
  if (text === undefined) {
    let n = 0
    text = sql.replace(/\?/g, () => `$${++n}`)
    numbered.set(sql, text)
  }
  return text
}

interface PgResult {
  readonly rows: Array<Record<string, unknown>>
  readonly rowCount: number | null
}

/**
 * Transactions on Postgres: each program runs inside `withTransaction` (so it joins one the fiber
 * already has), one statement after another on the transaction's connection, with no Effect
 * per statement beyond the connection's own call.
 */
const makeTransactions = (sql: SqlClient.SqlClient): Transactions.Service => {
  const execute = (conn: readonly [{ readonly executeRaw: (sql: string, params: ReadonlyArray<unknown>) => Effect.Effect<unknown, SqlError.SqlError> }, number], step: Step) => {
    const text = step.op === "insert" ? `${step.sql} RETURNING id` : step.sql
    return Effect.map(conn[0].executeRaw(toPg(text), step.params), (raw) => {
      const r = raw as PgResult
      switch (step.op) {
        case "all":
          return r.rows
        case "get":
          return r.rows[0]
        case "run":
          return r.rowCount ?? 0
        case "insert":
          return r.rows[0]!["id"]
        case "lock":
          return r.rows.length > 0
      }
    })
  }
  // Always inside withTransaction: the connection it opened (the probe its own nesting makes).
  const drive = <A>(program: Program<A>) =>
    Effect.flatMap(Effect.serviceOption(SqlClient.TransactionConnection), (open) => {
      const conn = Option.getOrThrow(open)
      const next = (input: unknown): Effect.Effect<A, SqlError.SqlError> => {
        const r = program.next(input)
        return r.done ? Effect.succeed(r.value) : Effect.flatMap(execute(conn, r.value), next)
      }
      return next(undefined)
    })
  const transaction = <A>(program: () => Program<A>) => sql.withTransaction(Effect.suspend(() => drive(program())))
  return { transaction, grouped: transaction }
}

export interface PostgresClientConfig {
  readonly url: Redacted.Redacted
  /** Connections in the pool. Default 10. */
  readonly maxConnections?: number | undefined
  readonly applicationName?: string | undefined
}

/** SqlClient (and PgClient) and Transactions on a Postgres database, through @effect/sql-pg's pool. */
export const layer = (config: PostgresClientConfig): Layer.Layer<SqlClient.SqlClient | Transactions, SqlError.SqlError> =>
  Layer.effectContext(
    Effect.map(SqlClient.SqlClient, (sql) => Context.make(Transactions, makeTransactions(sql)))
  ).pipe(
    Layer.provideMerge(PgClient.layer({
      url: config.url,
      maxConnections: config.maxConnections ?? 10,
      applicationName: config.applicationName ?? "pynchy",
      types: types() as never
    }))
  )
