/**
 * Persists the gateway's events into the host's event log (the `events` table): usage is the
 * accounting record, budget events are what a user gets told about. Events are written in
 * batches, one transaction each (one per request would cap the gateway at SQLite's commit rate).
 * Build it right after the Gateway so no event is published before it subscribes.
 */
import { SqlClient } from "@effect/sql"
import { Clock, Effect, Layer, Queue } from "effect"
import { HostStore } from "../db/HostStore.js"
import type { GatewayEvent } from "./events.js"
import { Gateway } from "./Gateway.js"

export const GatewayEventLog = {
  layer: Layer.scopedDiscard(
    Effect.gen(function* () {
      const gateway = yield* Gateway
      const store = yield* HostStore
      const sql = yield* SqlClient.SqlClient
      // Daily budgets survive a restart: today's recorded usage is the starting point.
      const now = yield* Clock.currentTimeMillis
      const midnight = now - (now % 86_400_000)
      for (const { workspace, tokens } of yield* store.tokensUsedSince(midnight)) yield* gateway.seedUsage(workspace, tokens)
      const events = yield* gateway.subscribe
      const persist = (batch: Iterable<GatewayEvent>) =>
        Effect.forEach(batch, ({ type, ...payload }) => store.appendEvent(type, payload), { discard: true }).pipe(
          sql.withTransaction,
          Effect.orDie
        )
      // Runs after the consumer below is interrupted: what was published but not yet written is written.
      yield* Effect.addFinalizer(() => Queue.takeAll(events).pipe(Effect.flatMap(persist)))
      yield* Effect.forkScoped(Effect.forever(Queue.takeBetween(events, 1, 512).pipe(Effect.flatMap(persist))))
    })
  )
}
