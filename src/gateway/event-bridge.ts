/**
 * The gateway's own events on the host's bus: usage becomes `gateway.call` (the accounting record
 * the event log keeps), budget and cooldown events keep their meaning. Daily budgets survive a
 * restart: today's recorded calls seed them before the gateway takes traffic. Build it right
 * after the Gateway, so no gateway event is published before it subscribes.
 */
import { Clock, Effect, Layer, Queue } from "effect"
import { HostStore } from "../db/HostStore.js"
import type { GatewayEvent } from "./events.js"
import { Gateway } from "./Gateway.js"
import { EventBus, type Publishable } from "../events/EventBus.js"

const DAY = 86_400_000

const toHostEvent = (e: GatewayEvent): Publishable => {
  switch (e.type) {
    case "gateway.usage": {
      const { durationMs, type: _, ...rest } = e
      return { ...rest, type: "gateway.call", latencyMs: durationMs }
    }
    case "gateway.budget_exceeded":
    case "gateway.cooldown":
      return e
  }
}

export const GatewayEvents = {
  layer: Layer.scopedDiscard(
    Effect.gen(function* () {
      const gateway = yield* Gateway
      const store = yield* HostStore
      const bus = yield* EventBus
      const now = yield* Clock.currentTimeMillis
      for (const { tokens, workspace } of yield* store.tokensUsedSince(now - (now % DAY))) yield* gateway.seedUsage(workspace, tokens)
      const events = yield* gateway.subscribe
      const forward = (batch: Iterable<GatewayEvent>) => Effect.forEach(batch, (e) => bus.publish(toHostEvent(e)), { discard: true })
      // Runs after the loop below is interrupted: what the gateway published last still reaches the bus.
      yield* Effect.addFinalizer(() => Effect.flatMap(Queue.takeAll(events), forward))
      yield* Effect.forkScoped(Effect.forever(Effect.flatMap(Queue.takeBetween(events, 1, 512), forward)))
    })
  )
}
