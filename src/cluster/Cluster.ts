/**
 * Several hosts on one Postgres database: every host is an @effect/cluster runner (SQL runner
 * storage and shard locks in the shared database, runners talking over TCP at `cluster.host:port`).
 * The cluster decides who runs what; nothing here counts heartbeats or elects anyone.
 *
 * - Each connection is a cluster singleton (`connectionSingleton`): it runs on the one runner that
 *   holds its shard, and that runner starts the connection's runtime and runs its conversations'
 *   turns (`DispatchGate`). So a conversation's turns run on one host at a time, next to the
 *   channel that delivers its replies.
 * - When a runner dies, its shard locks expire after `shardLockExpirationMs` and the survivors
 *   take its shards over: its singletons start again there (docs/deploy.md, "Several hosts").
 *
 * This module is what every host loads: the gate, the held connections and the choice between a
 * single host and a runner. @effect/cluster, its RPC and its TCP and HTTP clients (undici) are in
 * `./Runner.ts`, which only a cluster host loads (`runnerRuntimes`).
 */
import * as EntityId from "@effect/cluster/EntityId"
import type * as Sharding from "@effect/cluster/Sharding"
import { Context, Effect, Layer, Option } from "effect"
import { HostConfig } from "../config/HostConfig.js"
import type { ClusterConfig } from "../config/cluster.js"
import { MessageStore } from "../db/MessageStore.js"
import type { ConversationId } from "../domain/ids.js"
import { DispatchGate } from "../pipeline/DispatchGate.js"
import type { runtimesLayer } from "./Runner.js"

/** The singleton (and shard key) of a connection. */
export const connectionSingleton = (connection: string) => `pynchy/connection/${connection}`

/** The address other runners reach this one at, as the cluster's tables write it. */
export const runnerAddressOf = (cluster: ClusterConfig) => `${cluster.host}:${cluster.port}`

/** Wakes the holder of a connection about one of its conversations (set once the runner has joined). */
export type Forward = (connection: string, conversationId: ConversationId) => Effect.Effect<void>

export declare namespace HeldConnections {
  /** The connections whose singleton runs here (recovered, runtime ready): their turns are this host's. */
  export interface Service {
    readonly holds: (connection: string) => boolean
    readonly add: (connection: string) => void
    readonly remove: (connection: string) => void
    readonly list: () => ReadonlyArray<string>
    /** Wakes the host that holds `connection` (nothing until the runner has joined: `setForward`). */
    readonly forward: Forward
    readonly setForward: (forward: Forward) => void
  }
}
export class HeldConnections extends Context.Tag("pynchy/HeldConnections")<HeldConnections, HeldConnections.Service>() {
  static readonly layer = Layer.sync(HeldConnections, () => {
    const held = new Set<string>()
    // The queue is built before the runner joins the cluster (startup step 7): until then there is
    // no one to wake, and the holders scan for work when they take a connection anyway.
    let forward: Forward = () => Effect.void
    return {
      holds: (c) => held.has(c),
      add: (c) => void held.add(c),
      remove: (c) => void held.delete(c),
      list: () => [...held],
      forward: (c, id) => Effect.suspend(() => forward(c, id)),
      setForward: (f) => {
        forward = f
      }
    }
  })
}

/**
 * Admits a conversation when this host holds its connection (a conversation never changes
 * connection: cached); any other is the holder's, which is woken (a signal from `pynchy send`, a
 * schedule that fired here, a retry timer of a turn that ran here before the connection moved).
 */
const gateLayer = Layer.effect(
  DispatchGate,
  Effect.gen(function* () {
    const held = yield* HeldConnections
    const messages = yield* MessageStore
    const connectionOf = new Map<ConversationId, string>()
    return DispatchGate.of({
      admits: (conversationId) =>
        Effect.suspend(() => {
          const decide = (connection: string) =>
            held.holds(connection) ? Effect.succeed(true) : Effect.as(held.forward(connection, conversationId), false)
          const known = connectionOf.get(conversationId)
          if (known !== undefined) return decide(known)
          return Effect.flatMap(messages.conversation(conversationId), (c) => {
            if (Option.isNone(c)) return Effect.succeed(false)
            connectionOf.set(conversationId, c.value.connection)
            return decide(c.value.connection)
          })
        })
    })
  })
)

/** Whether this host is a cluster runner: its database is Postgres. */
export const isClustered = (config: { readonly databaseUrl: Option.Option<unknown> }) => Option.isSome(config.databaseUrl)

/** One layer or the other, by whether the host is a cluster runner (so the SQLite stack builds nothing of the cluster). */
export const whenClustered = <A, E1, R1, E2, R2>(cluster: Layer.Layer<A, E1, R1>, single: Layer.Layer<A, E2, R2>) =>
  Layer.unwrapEffect(Effect.map(HostConfig, (c): Layer.Layer<A, E1 | E2, R1 | R2> => (isClustered(c) ? cluster : single)))

/**
 * Before the queue: the connections this host holds and the gate on dispatch. A single host holds
 * nothing and its gate admits every conversation.
 */
export const holdingLayer = whenClustered(Layer.provideMerge(gateLayer, HeldConnections.layer), Layer.merge(HeldConnections.layer, DispatchGate.all))

/** The shard a connection's singleton lives on (as Sharding computes it). */
export const shardOf = (sharding: Sharding.Sharding["Type"], connection: string) => sharding.getShardId(EntityId.make(connectionSingleton(connection)), "default")

/**
 * A cluster host's connection runtimes: it joins the other runners (./Runner.ts, imported here, so
 * a single host never loads Sharding, the RPC or undici) and starts the runtimes of the
 * connections it is given.
 */
export const runnerRuntimes: Layer.Layer<
  Layer.Layer.Success<typeof runtimesLayer>,
  Layer.Layer.Error<typeof runtimesLayer>,
  Layer.Layer.Context<typeof runtimesLayer>
> = Layer.unwrapEffect(Effect.map(Effect.promise(() => import("./Runner.js")), (runner) => runner.runtimesLayer))
