/**
 * The connection runtimes of a cluster host: each connection is a cluster singleton, so it runs on
 * exactly one host, the one whose runner holds its shard. When it starts on a host (at startup,
 * or on a survivor after its holder died), in the seed's order:
 *
 * 1. the running turns of its conversations that other epochs own are interrupted and their claims
 *    released (the cluster gave this host the shard, so their holder lost it: dead, or stopped);
 * 2. its runtime starts and is ready (ConnectionRuntimes, the single-host code, for one runtime);
 * 3. the host holds the connection: its conversations' turns are dispatched here (`DispatchGate`),
 *    and every conversation with work is signalled (interrupted turns rerun, after readiness).
 *
 * When the shard moves away the singleton's scope closes: the host stops dispatching the
 * connection, then the runtime closes.
 */
import * as Sharding from "@effect/cluster/Sharding"
import * as ShardId from "@effect/cluster/ShardId"
import { Clock, Context, Duration, Effect, Layer, Option, Schedule, Scope } from "effect"
import { HostConfig } from "../config/HostConfig.js"
import { TurnStore } from "../db/TurnStore.js"
import { HostIdentity } from "../pipeline/HostIdentity.js"
import { TurnQueue } from "../pipeline/TurnQueue.js"
import { ConnectionRuntimes, ConnectionRuntimeSources, type RuntimeHealth } from "../runtimes/ConnectionRuntimes.js"
import { asNative } from "../contracts/native-runtime.js"
import { connectionSingleton, HeldConnections, runnerAddressOf, shardOf } from "./Cluster.js"
import { ClusterStore } from "./ClusterStore.js"

/** ConnectionRuntimes for a cluster host (steps 7 and 8 happen per connection, where it lands). */
export const layer = Layer.scoped(
  ConnectionRuntimes,
  Effect.gen(function* () {
    const { config } = yield* HostConfig
    const sharding = yield* Sharding.Sharding
    const entries = yield* ConnectionRuntimeSources
    const held = yield* HeldConnections
    const turns = yield* TurnStore
    const queue = yield* TurnQueue
    const identity = yield* HostIdentity
    const store = yield* ClusterStore
    // What ConnectionRuntimes needs to start one runtime (HostConfig, RuntimeContexts, EventBus, ...).
    // Without the layer's Scope: a runtime's finalizers belong to its singleton's scope.
    const services = Context.omit(Scope.Scope)(yield* Effect.context<Exclude<Effect.Effect.Context<typeof ConnectionRuntimes.make>, Scope.Scope>>())
    const runner = runnerAddressOf(config.cluster)
    const running = new Map<string, ConnectionRuntimes.Service>()

    const byName = new Map(entries.map((entry) => [asNative(entry.value).name, entry] as const))
    // Routed connections without a runtime (the CLI's, the Control UI's) are held the same way:
    // their conversations' turns run on one host.
    const names = [...byName.keys(), ...config.routes.map((r) => r.connection as string).filter((c) => !byName.has(c))]
    const connections = [...new Set(names)]

    const hold = (connection: string) =>
      Effect.gen(function* () {
        const start = yield* Clock.currentTimeMillis
        const released = yield* turns.releaseOrphans(identity.epoch, () => Effect.succeed(false), connection)
        const entry = byName.get(connection)
        if (entry !== undefined) {
          const runtimes = yield* ConnectionRuntimes.make.pipe(Effect.provide(services), Effect.provideService(ConnectionRuntimeSources, [entry]))
          running.set(connection, runtimes)
          yield* Effect.addFinalizer(() => Effect.sync(() => running.delete(connection)))
        }
        // Added after the runtime, so this finalizer runs before the runtime closes.
        held.add(connection)
        yield* Effect.addFinalizer(() =>
          Effect.zipRight(Effect.sync(() => held.remove(connection)), Effect.logInfo("connection released").pipe(Effect.annotateLogs({ connection, runner })))
        )
        const since = yield* Clock.currentTimeMillis
        yield* store.recordHolder({ connection, runner, epoch: identity.epoch, since })
        const work = yield* turns.conversationsWithWork
        yield* Effect.forEach(work, queue.signal, { discard: true })
        yield* Effect.logInfo("connection held").pipe(
          Effect.annotateLogs({ connection, runner, interrupted: released.interrupted.length, releasedClaims: released.releasedClaims, tookMs: since - start })
        )
      }).pipe(
        Effect.tapErrorCause((cause) => Effect.logError("connection could not start here", cause).pipe(Effect.annotateLogs({ connection, runner }))),
        Effect.annotateLogs({ connection })
      )

    for (const connection of connections) {
      yield* sharding.registerSingleton(connectionSingleton(connection), hold(connection))
    }

    // Ready (step 8) once this runner has taken its first shards and every connection on them is
    // held (its runtime ready): a lone host answers on its connections when it says ready. Bounded:
    // a runner given no shard, or a runtime that failed here, does not hold startup up for good.
    const allShards = Array.from({ length: config.cluster.shards }, (_, i) => ShardId.make("default", i + 1))
    const settled = Effect.sync(() =>
      allShards.some((s) => sharding.hasShardId(s)) && connections.every((c) => !sharding.hasShardId(shardOf(sharding, c)) || held.holds(c))
    )
    const bound = Duration.millis(config.cluster.shardLockExpirationMs + 2 * config.cluster.refreshAssignmentsMs + config.limits.runtimeStartTimeoutMs + config.limits.runtimeReadyTimeoutMs)
    const ok = yield* settled.pipe(Effect.repeat({ until: (done) => done, schedule: Schedule.spaced(Duration.millis(10)) }), Effect.timeoutOption(bound))
    if (Option.isNone(ok)) yield* Effect.logWarning("cluster: not settled at startup; the connections land as the shards do").pipe(Effect.annotateLogs({ runner, waitedMs: Duration.toMillis(bound) }))
    yield* Effect.logInfo("cluster joined").pipe(Effect.annotateLogs({ runner, holding: held.list().join(",") }))

    return ConnectionRuntimes.of({
      health: Effect.map(Effect.forEach([...running.values()], (r) => r.health), (all): ReadonlyArray<RuntimeHealth> => all.flat())
    })
  })
)
