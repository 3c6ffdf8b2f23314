/**
 * The host's event bus: every service that has something to say publishes a HostEvent here, and
 * observers (src/events/Observers.ts) read them. Publishing never waits for a subscriber: the
 * PubSub is unbounded and each subscriber drains its own queue (observers move events on to a
 * bounded queue of their own, where a slow one drops).
 */
import { Clock, Context, Effect, Layer, PubSub, type Queue, type Scope } from "effect"
import type { HostEvent } from "./HostEvent.js"

/** An event as a publisher gives it: `at` is optional (the bus stamps it from the Clock). */
export type Publishable = HostEvent extends infer E ? E extends { readonly at: number } ? Omit<E, "at"> & { readonly at?: number } : never : never

export declare namespace EventBus {
  export interface Service {
    /** Hands the event to every current subscriber; never waits and never fails. */
    readonly publish: (event: Publishable) => Effect.Effect<void>
    /** `publish` for several events at once, in order (one Clock read). */
    readonly publishAll: (events: ReadonlyArray<Publishable>) => Effect.Effect<void>
    /** Every event published from now on, in order, until the scope closes. */
    readonly subscribe: Effect.Effect<Queue.Dequeue<HostEvent>, never, Scope.Scope>
  }
}

export class EventBus extends Context.Tag("pynchy/EventBus")<EventBus, EventBus.Service>() {
  static readonly make = Effect.gen(function* () {
    const pubsub = yield* Effect.acquireRelease(PubSub.unbounded<HostEvent>(), PubSub.shutdown)
    const publish = (event: Publishable): Effect.Effect<void> =>
      event.at !== undefined
        ? Effect.asVoid(PubSub.publish(pubsub, event as HostEvent))
        : Effect.flatMap(Clock.currentTimeMillis, (at) => PubSub.publish(pubsub, { ...event, at } as HostEvent)).pipe(Effect.asVoid)
    const publishAll = (events: ReadonlyArray<Publishable>): Effect.Effect<void> =>
      events.length === 0
        ? Effect.void
        : Effect.flatMap(Clock.currentTimeMillis, (at) => PubSub.publishAll(pubsub, events.map((e) => (e.at !== undefined ? e : { ...e, at }) as HostEvent))).pipe(Effect.asVoid)
    return EventBus.of({ publish, publishAll, subscribe: PubSub.subscribe(pubsub) })
  })

  static readonly layer = Layer.scoped(EventBus, EventBus.make)

  /** A bus nobody reads, that does no work at all: the baseline of the bus's benchmark. */
  static readonly layerNone = Layer.succeed(EventBus, EventBus.of({ publish: () => Effect.void, publishAll: () => Effect.void, subscribe: Effect.never }))
}
