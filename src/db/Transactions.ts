import type { SqlError } from "@effect/sql/SqlError"
import { Context, type Effect } from "effect"

/**
 * One statement of a transaction program, with `?` placeholders. `insert` yields the new row's id
 * (SQLite: `lastInsertRowid`; Postgres: the statement with `RETURNING id`). `lock` takes a row lock
 * and yields whether it got it: on Postgres the statement runs (`... FOR NO KEY UPDATE SKIP LOCKED`);
 * on SQLite it is not run and yields true, since `BEGIN IMMEDIATE` already holds the database's one
 * write lock.
 */
export interface Step {
  readonly op: "all" | "get" | "run" | "insert" | "lock"
  readonly sql: string
  readonly params: ReadonlyArray<unknown>
}

/**
 * A hot transaction's logic, written once for both dialects: a generator that yields its
 * statements. SQLite runs it synchronously inside better-sqlite3's transaction (a statement costs
 * microseconds, no Effect each); Postgres runs each statement on the transaction's connection.
 */
export type Program<A> = Generator<Step, A, unknown>

/** Every row the statement returns. */
export function* all<A = Record<string, unknown>>(sql: string, ...params: ReadonlyArray<unknown>): Generator<Step, Array<A>, unknown> {
  return (yield { op: "all", sql, params }) as Array<A>
}
/** The first row, if any. */
export function* get<A = Record<string, unknown>>(sql: string, ...params: ReadonlyArray<unknown>): Generator<Step, A | undefined, unknown> {
  return (yield { op: "get", sql, params }) as A | undefined
}
/** Runs a write; yields the number of rows it changed. */
export function* run(sql: string, ...params: ReadonlyArray<unknown>): Generator<Step, number, unknown> {
  return (yield { op: "run", sql, params }) as number
}
/** Runs an INSERT into a table with an integer `id` key; yields the new row's id. */
export function* insert(sql: string, ...params: ReadonlyArray<unknown>): Generator<Step, number, unknown> {
  return (yield { op: "insert", sql, params }) as number
}
/** Tries a row lock (`... FOR NO KEY UPDATE SKIP LOCKED`): false when another transaction holds it or the row is missing. */
export function* lock(sql: string, ...params: ReadonlyArray<unknown>): Generator<Step, boolean, unknown> {
  return (yield { op: "lock", sql, params }) as boolean
}

export declare namespace Transactions {
  export interface Service {
    /**
     * Runs the program in one write transaction. Inside a `withTransaction` of the same fiber it
     * joins that transaction (as a savepoint). A throw or a failed statement rolls back and fails
     * with SqlError.
     */
    readonly transaction: <A>(program: () => Program<A>) => Effect.Effect<A, SqlError>
    /**
     * `transaction` for small transitions many fibers make at once (turns that end together after
     * a restart). SQLite: group commit (the calls of fibers that run in the same scheduler turn
     * share one commit, each in its own savepoint, so a throw fails only its caller). Postgres: a
     * transaction each (its connections commit concurrently).
     */
    readonly grouped: <A>(program: () => Program<A>) => Effect.Effect<A, SqlError>
  }
}

/** The hot multi-statement transactions (ingest, turn acquire and finish), on either dialect. */
export class Transactions extends Context.Tag("pynchy/Transactions")<Transactions, Transactions.Service>() {}
