import { SqlClient } from "@effect/sql"
import { Clock, Context, Effect, Layer, Option } from "effect"
import type { HostEpoch } from "../domain/ids.js"
import { jsonField, jsonNumber, jsonRows } from "./dialect.js"

export interface HostRun {
  readonly epoch: string
  readonly pid: number
  readonly version: string
  readonly startedAt: number
  readonly readyAt: number | null
  readonly stoppedAt: number | null
}

export declare namespace HostStore {
  /** Host runs (one per process start) and the event log; table row counts for `pynchy status`. */
  export interface Service {
    readonly recordStart: (run: { epoch: HostEpoch; pid: number; version: string }) => Effect.Effect<void>
    readonly recordReady: (epoch: HostEpoch) => Effect.Effect<void>
    readonly recordStop: (epoch: HostEpoch) => Effect.Effect<void>
    readonly lastRun: Effect.Effect<Option.Option<HostRun>>
    readonly appendEvent: (type: string, payload: unknown) => Effect.Effect<void>
    /** Appends bus events (`type` and `at` in their columns, the rest as the payload); the caller makes the transaction. */
    readonly appendEvents: (events: ReadonlyArray<{ readonly type: string; readonly at: number }>) => Effect.Effect<void>
    /** Deletes events older than `before` (epoch millis); returns how many. */
    readonly pruneEvents: (before: number) => Effect.Effect<number>
    readonly recentEvents: (limit: number) => Effect.Effect<ReadonlyArray<{ id: number; type: string; payload: unknown; at: number }>>
    /** Rows per table, read in time that does not grow with history (see `history`). */
    readonly tableCounts: Effect.Effect<Record<string, number>>
    /** Every connection's durable cursors; `updatedAt` is when the last event that moved one was ingested. */
    readonly cursors: Effect.Effect<ReadonlyArray<{ readonly connection: string; readonly stream: string; readonly position: string; readonly order: number; readonly updatedAt: number }>>
    /** Tokens used per workspace since `since` (epoch millis), from the gateway's call events (`gateway.usage` before the event bus). */
    readonly tokensUsedSince: (since: number) => Effect.Effect<ReadonlyArray<{ readonly workspace: string; readonly tokens: number }>>
    /** Tokens and calls per UTC day (epoch millis of its midnight) and deployment since `since`, from the gateway's call events. */
    readonly usagePerDay: (since: number) => Effect.Effect<ReadonlyArray<{ readonly day: number; readonly deployment: string; readonly tokens: number; readonly calls: number }>>
  }
}

/**
 * History tables: rowid tables that rows are only appended to (and would only be trimmed from the
 * oldest end), so their row count is `max(rowid) - min(rowid) + 1`, two b-tree seeks instead of a
 * scan (`COUNT(*)` of a million messages took ~370 ms). receipts (WITHOUT ROWID, one per inbound
 * message from a channel) is not shown: counting it is such a scan. The key is the integer `id`
 * where there is one (SQLite's rowid itself); the text-keyed tables have a `rowid` column on
 * Postgres (unique, an identity), SQLite's own.
 */
const history = [
  ["conversations", "rowid"], ["messages", "id"], ["turns", "id"], ["deliveries", "id"], ["workspaces", "rowid"], ["attachments", "id"], ["events", "id"],
  ["host_runs", "rowid"]
] as const
/** Working sets, small whatever the history: rows are deleted from them, so they are counted. */
const workingSets = ["cursors", "delivery_claims", "session_bindings"] as const
const shown = ["conversations", "messages", "cursors", "turns", "delivery_claims", "deliveries", "workspaces", "session_bindings", "attachments", "events", "host_runs"] as const

export class HostStore extends Context.Tag("pynchy/HostStore")<HostStore, HostStore.Service>() {
  static readonly make = Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    return HostStore.of({
      recordStart: ({ epoch, pid, version }) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => sql`INSERT INTO host_runs (epoch, pid, version, started_at) VALUES (${epoch}, ${pid}, ${version}, ${now})`).pipe(Effect.asVoid, Effect.orDie),
      recordReady: (epoch) => Effect.flatMap(Clock.currentTimeMillis, (now) => sql`UPDATE host_runs SET ready_at = ${now} WHERE epoch = ${epoch}`).pipe(Effect.asVoid, Effect.orDie),
      recordStop: (epoch) => Effect.flatMap(Clock.currentTimeMillis, (now) => sql`UPDATE host_runs SET stopped_at = ${now} WHERE epoch = ${epoch}`).pipe(Effect.asVoid, Effect.orDie),
      lastRun: sql<HostRun>`SELECT epoch, pid, version, started_at AS "startedAt", ready_at AS "readyAt", stopped_at AS "stoppedAt"
          FROM host_runs ORDER BY started_at DESC, rowid DESC LIMIT 1`.pipe(Effect.map((r) => Option.fromNullable(r[0])), Effect.orDie),
      appendEvent: (type, payload) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => sql`INSERT INTO events (type, payload, at) VALUES (${type}, ${JSON.stringify(payload)}, ${now})`).pipe(Effect.asVoid, Effect.orDie),
      // One statement per batch, whatever its size (statement cost through SqlClient is the write bottleneck).
      appendEvents: (events) =>
        events.length === 0 ? Effect.void : sql`INSERT INTO events (type, payload, at)
          ${jsonRows(sql, events.map(({ at, type, ...payload }) => [type, JSON.stringify(payload), at]), ["text", "text", "int"])}`.pipe(Effect.asVoid, Effect.orDie),
      pruneEvents: (before) =>
        sql.onDialectOrElse({
          pg: () => sql<{ n: number }>`WITH d AS (DELETE FROM events WHERE at < ${before} RETURNING 1) SELECT COUNT(*) AS n FROM d`,
          orElse: () => sql`DELETE FROM events WHERE at < ${before}`.pipe(Effect.zipRight(sql<{ n: number }>`SELECT changes() AS n`), sql.withTransaction)
        }).pipe(Effect.map((rows) => rows[0]?.n ?? 0), Effect.orDie),
      recentEvents: (limit) =>
        sql<{ id: number; type: string; payload: string; at: number }>`SELECT id, type, payload, at FROM events ORDER BY id DESC LIMIT ${limit}`.pipe(
          Effect.map((rows) => rows.map((r) => ({ ...r, payload: JSON.parse(r.payload) as unknown }))),
          Effect.orDie
        ),
      tokensUsedSince: (since) =>
        sql<{ workspace: string; tokens: number }>`SELECT ${jsonField(sql, "payload", "workspace")} AS workspace,
            SUM(${jsonNumber(sql, "payload", "totalTokens")}) AS tokens
          FROM events WHERE type IN ('gateway.call', 'gateway.usage') AND at >= ${since} GROUP BY 1`.pipe(Effect.orDie),
      usagePerDay: (since) =>
        sql<{ day: number; deployment: string; tokens: number; calls: number }>`SELECT (at / 86400000) * 86400000 AS day,
            ${jsonField(sql, "payload", "deployment")} AS deployment, SUM(${jsonNumber(sql, "payload", "totalTokens")}) AS tokens, COUNT(*) AS calls
          FROM events WHERE type IN ('gateway.call', 'gateway.usage') AND at >= ${since} GROUP BY 1, 2 ORDER BY 1, 2`.pipe(Effect.orDie),
      cursors: sql<{ connection: string; stream: string; position: string; order: number; updatedAt: number }>`SELECT connection, stream, position,
          ord AS "order", updated_at AS "updatedAt" FROM cursors ORDER BY connection, stream`.pipe(Effect.orDie),
      tableCounts: sql<Record<string, number | null>>`SELECT ${sql.literal([
        // Each min and max alone in its query: SQLite seeks only for a lone min() or max().
        ...history.map(([t, key]) => `(SELECT max(${key}) FROM ${t}) - (SELECT min(${key}) FROM ${t}) + 1 AS ${t}`),
        ...workingSets.map((t) => `(SELECT COUNT(*) FROM ${t}) AS ${t}`)
      ].join(", "))}`.pipe(
        Effect.map(([row]) => Object.fromEntries(shown.map((t) => [t, row?.[t] ?? 0]))),
        Effect.orDie
      )
    })
  })

  static readonly layer = Layer.effect(HostStore, HostStore.make)
}
