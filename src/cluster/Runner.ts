/**
 * This host as an @effect/cluster runner (see ./Cluster.ts for the design): Sharding on the shared
 * Postgres database, the runners reaching each other over TCP. Only a cluster host loads this
 * module (`Cluster.runnerRuntimes`): it brings @effect/cluster, @effect/rpc, msgpackr and undici,
 * about a third of the bundle, which a single host never needs.
 */
import { RunnerAddress } from "@effect/cluster/RunnerAddress"
import * as NodeClusterSocket from "@effect/platform-node/NodeClusterSocket"
import * as SqlClient from "@effect/sql/SqlClient"
import { Duration, Effect, Layer, Option } from "effect"
import { HostConfig } from "../config/HostConfig.js"
import type { ClusterConfig } from "../config/cluster.js"
import { runnerAddressOf } from "./Cluster.js"
import * as ClusterRuntimes from "./ClusterRuntimes.js"
import { ClusterStore } from "./ClusterStore.js"
import * as ConnectionEntity from "./ConnectionEntity.js"

/** The @effect/cluster settings of a `cluster:` section (the lock timings are the failover bound). */
const shardingConfigOf = (cluster: ClusterConfig) => ({
  runnerAddress: Option.some(RunnerAddress.make({ host: cluster.host, port: cluster.port })),
  runnerListenAddress: cluster.listenHost === undefined ? Option.none() : Option.some(RunnerAddress.make({ host: cluster.listenHost, port: cluster.port })),
  shardsPerGroup: cluster.shards,
  shardLockExpiration: Duration.millis(cluster.shardLockExpirationMs),
  shardLockRefreshInterval: Duration.millis(Math.min(cluster.shardLockRefreshMs, Math.floor(cluster.shardLockExpirationMs / 3))),
  refreshAssignmentsInterval: Duration.millis(cluster.refreshAssignmentsMs),
  // Shard locks as rows (cluster_locks), so `pynchy status` can count each runner's shards; a
  // killed runner's rows expire after shardLockExpiration.
  shardLockDisableAdvisory: true,
  entityMessagePollInterval: Duration.seconds(2)
})

/** The advisory lock that orders the runners' starts on one database. */
const RUNNER_START_LOCK = 0x70796e63

/**
 * Builds `layer` while this host holds a Postgres advisory lock on a reserved connection, so the
 * hosts of a cluster build it one after another. The runner's SQL storage creates its tables with
 * `CREATE TABLE IF NOT EXISTS`, which Postgres does not make safe against itself: two hosts
 * starting at once on a new database may both create a table, and one fails (the three-host crash
 * drill once lost a host's start to it). The lock goes once the layer is built (or the session
 * ends, when a host dies while building), not when the layer closes.
 */
const builtOneAtATime = <A, E, R>(layer: Layer.Layer<A, E, R>) =>
  Layer.scopedContext(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const outer = yield* Effect.scope
      return yield* Effect.scoped(
        Effect.gen(function* () {
          const conn = yield* Effect.orDie(sql.reserve)
          yield* Effect.orDie(conn.executeRaw(`SELECT pg_advisory_lock(${RUNNER_START_LOCK})`, []))
          yield* Effect.addFinalizer(() => Effect.ignore(conn.executeRaw(`SELECT pg_advisory_unlock(${RUNNER_START_LOCK})`, [])))
          return yield* Layer.buildWithScope(layer, outer)
        })
      )
    })
  )

/** This host as a runner: Sharding on the shared database (SQL runner storage and message storage), reached over TCP. */
const runnerLayer = Layer.unwrapEffect(
  Effect.map(HostConfig, ({ config }) =>
    builtOneAtATime(NodeClusterSocket.layer({ storage: "sql", shardingConfig: shardingConfigOf(config.cluster) })).pipe(
      Layer.tap(() => Effect.logInfo("cluster runner started").pipe(Effect.annotateLogs({ runner: runnerAddressOf(config.cluster) })))
    ))
)

/** The runner, with the connection runtimes it is given and the entity that wakes a connection's holder. */
export const runtimesLayer = Layer.merge(ClusterRuntimes.layer, ConnectionEntity.layer).pipe(Layer.provide(Layer.merge(runnerLayer, ClusterStore.layer)))
