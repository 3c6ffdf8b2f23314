import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer } from "effect"

export interface ClusterView {
  /** The registered runners (as @effect/cluster keeps them), with their last heartbeat. */
  readonly runners: ReadonlyArray<{ readonly address: string; readonly healthy: boolean; readonly heartbeatAgeMs: number }>
  /** Shard locks held per runner address (cluster_locks). */
  readonly shards: ReadonlyArray<{ readonly address: string; readonly shards: number }>
  /** Which runner last took each connection, and when (epoch millis). */
  readonly connections: ReadonlyArray<{ readonly connection: string; readonly runner: string; readonly epoch: string; readonly since: number }>
}

export declare namespace ClusterStore {
  /** The cluster as the shared database records it: for `pynchy status` on any host. */
  export interface Service {
    readonly recordHolder: (holder: { readonly connection: string; readonly runner: string; readonly epoch: string; readonly since: number }) => Effect.Effect<void>
    /** Empty lists where no runner ever started (the cluster's tables do not exist yet). */
    readonly view: Effect.Effect<ClusterView>
  }
}

export class ClusterStore extends Context.Tag("pynchy/ClusterStore")<ClusterStore, ClusterStore.Service>() {
  static readonly make = Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const orEmpty = <A>(rows: Effect.Effect<ReadonlyArray<A>, unknown>) => Effect.orElseSucceed(rows, (): ReadonlyArray<A> => [])
    return ClusterStore.of({
      recordHolder: ({ connection, epoch, runner, since }) =>
        sql`INSERT INTO cluster_connections (connection, runner, epoch, since) VALUES (${connection}, ${runner}, ${epoch}, ${since})
          ON CONFLICT (connection) DO UPDATE SET runner = excluded.runner, epoch = excluded.epoch, since = excluded.since`.pipe(Effect.asVoid, Effect.orDie),
      view: Effect.all({
        // The cluster keeps its tables on Postgres only here (a SQLite host has no cluster): its SQL.
        runners: orEmpty(sql<{ address: string; healthy: unknown; ageMs: number }>`
          SELECT address, healthy, (EXTRACT(EPOCH FROM (NOW() - last_heartbeat)) * 1000)::bigint AS "ageMs" FROM cluster_runners ORDER BY address`.pipe(
          Effect.map((rows) => rows.map((r) => ({ address: r.address, healthy: Boolean(r.healthy), heartbeatAgeMs: Number(r.ageMs) })))
        )),
        shards: orEmpty(sql<{ address: string; shards: number }>`
          SELECT address, COUNT(*) AS shards FROM cluster_locks GROUP BY address ORDER BY address`.pipe(Effect.map((rows) => rows.map((r) => ({ address: r.address, shards: Number(r.shards) }))))),
        connections: orEmpty(sql<{ connection: string; runner: string; epoch: string; since: number }>`
          SELECT connection, runner, epoch, since FROM cluster_connections ORDER BY connection`)
      })
    })
  })

  static readonly layer = Layer.effect(ClusterStore, ClusterStore.make)
}
