/**
 * The Control UI's live feed: a notice per change worth re-rendering a page for, sent to the
 * browser over SSE (`/live`, `event: change`). Its sources are the UI's own channel (a reply or
 * streamed text for a UI conversation) and the UI's own actions (a message posted, an approval
 * decided). A page that shows live data re-reads itself on a notice.
 */
import { Effect, PubSub, type Queue, type Scope } from "effect"

export interface LiveChange {
  /** What changed: `delivery`, `message`, `approval`, ... */
  readonly kind: string
}

export interface LiveFeed {
  /** Never waits: a browser that reads too slowly loses notices, not the host's time. */
  readonly publish: (change: LiveChange) => Effect.Effect<void>
  readonly subscribe: Effect.Effect<Queue.Dequeue<LiveChange>, never, Scope.Scope>
}

export const makeLiveFeed: Effect.Effect<LiveFeed, never, Scope.Scope> = Effect.gen(function* () {
  const pubsub = yield* Effect.acquireRelease(PubSub.sliding<LiveChange>(64), PubSub.shutdown)
  return {
    publish: (change) => Effect.asVoid(PubSub.publish(pubsub, change)),
    subscribe: PubSub.subscribe(pubsub)
  }
})
