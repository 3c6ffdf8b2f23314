/**
 * The HTTP channel's outbound side: replies kept in memory per place (bounded), with ids that
 * grow across restarts (seeded from the clock), and live subscribers for the SSE stream. The
 * durable record of every reply is the host's deliveries table; this buffer only serves reads.
 * Streamed text (deltas) is passed to live subscribers only: never kept, never replayed.
 */
import type { OutboundDelivery, ProgressEvent } from "../../pipeline/channel-contract.js"

export interface Reply {
  readonly id: number
  /** The delivery's idempotency key: a reply resent after a crash carries the same key. */
  readonly key: string
  readonly kind: "reply" | "notice"
  readonly text: string
  readonly at: number
}

type Listener = (reply: Reply) => void

/** Streamed text of the reply that will arrive with `key` (the `event: delta` of the stream). */
export interface Delta {
  readonly conversationId: string
  readonly turnId: number
  readonly key: string
  readonly text: string
}
type DeltaListener = (delta: Delta) => void

export class ReplyBuffer {
  private seq = Date.now() * 1_000
  private readonly byPlace = new Map<string, Array<Reply>>()
  private readonly keys = new Map<string, Set<string>>()
  private readonly listeners = new Map<string, Set<Listener>>()
  private readonly deltaListeners = new Map<string, Set<DeltaListener>>()

  constructor(private readonly keep: number) {}

  /** Adds a delivery's reply; a resend of a key already held is not added twice. */
  add(delivery: OutboundDelivery): void {
    const keys = this.keys.get(delivery.place) ?? new Set<string>()
    if (keys.has(delivery.idempotencyKey)) return
    const reply: Reply = { id: ++this.seq, key: delivery.idempotencyKey, kind: delivery.kind, text: delivery.text, at: Date.now() }
    const list = this.byPlace.get(delivery.place) ?? []
    list.push(reply)
    keys.add(reply.key)
    while (list.length > this.keep) keys.delete(list.shift()!.key)
    this.byPlace.set(delivery.place, list)
    this.keys.set(delivery.place, keys)
    for (const l of this.listeners.get(delivery.place) ?? []) l(reply)
  }

  after(place: string, after: number): Array<Reply> {
    return (this.byPlace.get(place) ?? []).filter((r) => r.id > after)
  }

  /** Listens for new replies of a place; returns the unsubscribe. */
  subscribe(place: string, listener: Listener): () => void {
    return listen(this.listeners, place, listener)
  }

  /** Hands a turn's streamed text to the live listeners of its place (nobody listening: dropped). */
  progress(event: ProgressEvent): void {
    // A delta that lost the race with its own reply is stale: the reply said it all.
    if (event.type !== "delta" || this.keys.get(event.place)?.has(event.replyKey) === true) return
    const delta: Delta = { conversationId: event.conversationId, turnId: event.turnId, key: event.replyKey, text: event.text }
    for (const l of this.deltaListeners.get(event.place) ?? []) l(delta)
  }

  /** Listens for streamed text of a place; returns the unsubscribe. */
  subscribeDeltas(place: string, listener: DeltaListener): () => void {
    return listen(this.deltaListeners, place, listener)
  }
}

const listen = <L>(byPlace: Map<string, Set<L>>, place: string, listener: L): () => void => {
  const set = byPlace.get(place) ?? new Set<L>()
  set.add(listener)
  byPlace.set(place, set)
  return () => {
    set.delete(listener)
    if (set.size === 0) byPlace.delete(place)
  }
}
