/**
 * The HTTP channel's outbound side. Replies are read from the durable record (the deliveries
 * table, `DeliveryStore.ofClient`): a reply's id is its delivery id, so ids grow across restarts
 * and a client reading `after=0` after a restart gets what was delivered before it. What lives
 * in memory is only who is listening: a delivery wakes the streams of its place (they read the
 * table again), and streamed text (deltas) goes to them directly, never kept, never replayed.
 */
import { Queue } from "effect"
import type { Delivery } from "../../domain/delivery.js"
import type { ProgressEvent } from "../../contracts/channel.js"

export interface Reply {
  readonly id: number
  /** The delivery's idempotency key: a reply resent after a crash carries the same key. */
  readonly key: string
  readonly kind: "reply" | "notice"
  readonly text: string
  readonly at: number
  /** The URL of its audio (a spoken reply); absent for text only. */
  readonly audio?: string
  /** The files it carries (the agent's outbox), each with the URL that serves it; absent when none. */
  readonly files?: ReadonlyArray<{ readonly name: string; readonly type: string; readonly url: string }>
}

export const replyOf = (d: Delivery, audio?: string, files?: Reply["files"]): Reply => ({
  id: d.id,
  key: d.idempotencyKey,
  kind: d.kind,
  text: d.text,
  at: d.createdAt,
  ...(audio !== undefined ? { audio } : {}),
  ...(files !== undefined && files.length > 0 ? { files } : {})
})

/** Streamed text of the reply that will arrive with `key` (the `event: delta` of the stream). */
export interface Delta {
  readonly conversationId: string
  readonly turnId: number
  readonly key: string
  readonly text: string
}

/** One open stream: wake-ups (coalesced: one pending is enough) and deltas (dropped when it reads too slowly). */
export interface Listener {
  readonly wake: Queue.Queue<void>
  readonly deltas: Queue.Queue<Delta>
}

/** A stream whose client reads slower than this many waiting deltas loses deltas (never replies). */
export const DELTA_BACKLOG = 256

export class ReplyHub {
  private readonly byPlace = new Map<string, Set<Listener>>()

  /** Listens to a place; returns the unsubscribe. */
  listen(place: string, listener: Listener): () => void {
    const set = this.byPlace.get(place) ?? new Set<Listener>()
    set.add(listener)
    this.byPlace.set(place, set)
    return () => {
      set.delete(listener)
      if (set.size === 0) this.byPlace.delete(place)
    }
  }

  /** A delivery of this place was recorded: its streams read the table again. */
  delivered(place: string): void {
    for (const l of this.byPlace.get(place) ?? []) Queue.unsafeOffer(l.wake, undefined)
  }

  /** Hands a turn's streamed text to the streams of its place (nobody listening: dropped). */
  progress(event: ProgressEvent): void {
    if (event.type !== "delta") return
    const delta: Delta = { conversationId: event.conversationId, turnId: event.turnId, key: event.replyKey, text: event.text }
    for (const l of this.byPlace.get(event.place) ?? []) Queue.unsafeOffer(l.deltas, delta)
  }
}
