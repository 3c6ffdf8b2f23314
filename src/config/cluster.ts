/**
 * The `cluster:` section: how this host joins the others when the database is Postgres
 * (docs/deploy.md, "Several hosts"). With SQLite it is ignored: one host, no cluster.
 */
import { Schema } from "effect"

const Port = Schema.Int.pipe(Schema.between(1, 65_535))
const Millis = Schema.Int.pipe(Schema.between(100, 3_600_000))

export class ClusterConfig extends Schema.Class<ClusterConfig>("ClusterConfig")({
  /** The address the other hosts reach this one at (its runner address). */
  host: Schema.optionalWith(Schema.NonEmptyTrimmedString, { default: () => "localhost" }),
  port: Schema.optionalWith(Port, { default: () => 34431 }),
  /** Where the runner listens; by default `host`. */
  listenHost: Schema.optional(Schema.NonEmptyTrimmedString),
  /** How long a shard lock outlives its holder's last refresh: a killed host's shards move after it. */
  shardLockExpirationMs: Schema.optionalWith(Millis, { default: () => 15_000 }),
  /** How often a holder refreshes its shard locks (at most a third of the expiration). */
  shardLockRefreshMs: Schema.optionalWith(Millis, { default: () => 5_000 }),
  /** How often each host reads the runners and recomputes the shard assignments. */
  refreshAssignmentsMs: Schema.optionalWith(Millis, { default: () => 3_000 }),
  /** Shards per group: the same on every host. */
  shards: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 10_000)), { default: () => 300 })
}) {}
