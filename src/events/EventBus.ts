/**
 * The host's event bus: every service that has something to say publishes a HostEvent here, and
 * observers (src/observers/Observers.ts) read them. Publishing never waits for anyone: it hands the
 * event, in the publisher's own fiber, to each attached sink, and a sink only queues it (an
 * observer's bounded queue, where a slow observer drops; a subscriber's queue). No fiber runs
 * between a publish and the queues, so an event costs the publisher one call per sink.
 */
import { Clock, Context, Effect, Layer, Queue, type Scope } from "effect"
import type { HostEvent } from "./HostEvent.js"

/** An event as a publisher gives it: `at` is optional (the bus stamps it from the Clock). */
export type Publishable = HostEvent extends infer E ? E extends { readonly at: number } ? Omit<E, "at"> & { readonly at?: number } : never : never

/** Takes one published event at once, in the publisher's fiber: it must only queue it (no waiting, no throwing). */
export type EventSink = (event: HostEvent) => void

export declare namespace EventBus {
  export interface Service {
    /** Hands the event to every attached sink; never waits and never fails. */
    readonly publish: (event: Publishable) => Effect.Effect<void>
    /** `publish` for several events at once, in order (one Clock read). */
    readonly publishAll: (events: ReadonlyArray<Publishable>) => Effect.Effect<void>
    /** Every event published from now on goes to `sink`, in order, until the scope closes. */
    readonly attach: (sink: EventSink) => Effect.Effect<void, never, Scope.Scope>
    /** Every event published from now on, in order, on an unbounded queue, until the scope closes. */
    readonly subscribe: Effect.Effect<Queue.Dequeue<HostEvent>, never, Scope.Scope>
  }
}

export class EventBus extends Context.Tag("pynchy/EventBus")<EventBus, EventBus.Service>() {
  static readonly make = Effect.sync(() => {
    const sinks = new Set<EventSink>()
    const deliver = (event: HostEvent) => {
      for (const sink of sinks) sink(event)
    }
    const publish = (event: Publishable): Effect.Effect<void> =>
      event.at !== undefined
        ? Effect.sync(() => deliver(event as HostEvent))
        : Effect.map(Clock.currentTimeMillis, (at) => deliver({ ...event, at } as HostEvent))
    const publishAll = (events: ReadonlyArray<Publishable>): Effect.Effect<void> =>
      events.length === 0
        ? Effect.void
        : Effect.map(Clock.currentTimeMillis, (at) => {
          for (const e of events) deliver((e.at !== undefined ? e : { ...e, at }) as HostEvent)
        })
    const attach = (sink: EventSink) =>
      Effect.acquireRelease(Effect.sync(() => void sinks.add(sink)), () => Effect.sync(() => void sinks.delete(sink)))
    const subscribe = Effect.gen(function* () {
      const queue = yield* Effect.acquireRelease(Queue.unbounded<HostEvent>(), Queue.shutdown)
      yield* attach((event) => void queue.unsafeOffer(event))
      return queue
    })
    return EventBus.of({ publish, publishAll, attach, subscribe })
  })

  static readonly layer = Layer.effect(EventBus, EventBus.make)

  /** A bus nobody reads, that does no work at all: the baseline of the bus's benchmark. */
  static readonly layerNone = Layer.succeed(EventBus, EventBus.of({ publish: () => Effect.void, publishAll: () => Effect.void, attach: () => Effect.void, subscribe: Effect.never }))
}
