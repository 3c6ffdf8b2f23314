/**
 * The Control UI's live feed: the host's event bus, as a notice per event (its type only, never
 * its ids or content), sent to the browser over SSE (`/live`, `event: change`). A page that shows
 * live data re-reads itself on a notice.
 */
import { Effect, Stream } from "effect"
import { EventBus } from "../events/EventBus.js"

export interface LiveChange {
  /** The event's type: `message.ingested`, `approval.decided`, `delivery.sent`, ... */
  readonly kind: string
}

/** Notices from now on, while the stream is read. A browser that reads too slowly loses notices, never the bus's time. */
export const liveChanges: Effect.Effect<Stream.Stream<LiveChange>, never, EventBus> = Effect.map(EventBus, (bus) =>
  Stream.unwrapScoped(Effect.map(bus.subscribe, (queue) => Stream.fromQueue(queue))).pipe(
    Stream.map((e): LiveChange => ({ kind: e.type })),
    Stream.buffer({ capacity: 64, strategy: "sliding" })
  ))
