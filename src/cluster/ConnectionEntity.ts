/**
 * The cluster's way to wake the host that holds a connection: an entity per connection, keyed
 * like the connection's singleton, so it lives on the same shard and so the same runner. A host
 * that is signalled about a conversation it does not hold sends `Wake` (fire and forget; the work
 * itself is in the database); the holder signals its queue and resumes the connection's pending
 * deliveries (a notice recorded on another host).
 */
import * as Entity from "@effect/cluster/Entity"
import * as Sharding from "@effect/cluster/Sharding"
import * as Rpc from "@effect/rpc/Rpc"
import { Duration, Effect, FiberSet, Layer, Schema } from "effect"
import { ConversationId } from "../domain/ids.js"
import { Outbox } from "../pipeline/Outbox.js"
import { TurnQueue } from "../pipeline/TurnQueue.js"
import { connectionSingleton, HeldConnections, shardOf } from "./Cluster.js"

export const ConnectionEntity = Entity.make("pynchy/connection", [
  Rpc.make("Wake", { payload: { connection: Schema.String, conversationId: Schema.String } })
])

const WAKE_TIMEOUT = Duration.seconds(30)

/** The entity's handler on this runner, and this host's `forward` through it. */
export const layer = Layer.merge(
  ConnectionEntity.toLayer(Effect.gen(function* () {
    const queue = yield* TurnQueue
    const outbox = yield* Outbox
    return ConnectionEntity.of({
      Wake: ({ payload }) => Effect.zipRight(queue.signal(ConversationId.make(payload.conversationId)), Effect.asVoid(outbox.resumePending(payload.connection)))
    })
  })),
  Layer.scopedDiscard(Effect.gen(function* () {
    const sharding = yield* Sharding.Sharding
    const held = yield* HeldConnections
    const client = yield* ConnectionEntity.client
    const sends = yield* FiberSet.make()
    held.setForward((connection, conversationId) =>
      // Its shard is here: the singleton is starting on this host and scans for work when it holds.
      sharding.hasShardId(shardOf(sharding, connection))
        ? Effect.void
        : Effect.asVoid(FiberSet.run(
          sends,
          client(connectionSingleton(connection)).Wake({ connection, conversationId }, { discard: true }).pipe(
            Effect.timeout(WAKE_TIMEOUT),
            Effect.catchAllCause((cause) => Effect.logWarning("could not wake the holder of a connection", cause).pipe(Effect.annotateLogs({ connection, conversationId })))
          )
        )))
    yield* Effect.addFinalizer(() => Effect.sync(() => held.setForward(() => Effect.void)))
  }))
)
