/**
 * The HTTP channel's outbound side: replies kept in memory per place (bounded), with ids that
 * grow across restarts (seeded from the clock), and live subscribers for the SSE stream. The
 * durable record of every reply is the host's deliveries table; this buffer only serves reads.
 */
import type { OutboundDelivery } from "../../pipeline/channel-contract.js"

export interface Reply {
  readonly id: number
  /** The delivery's idempotency key: a reply resent after a crash carries the same key. */
  readonly key: string
  readonly kind: "reply" | "notice"
  readonly text: string
  readonly at: number
}

type Listener = (reply: Reply) => void

export class ReplyBuffer {
  private seq = Date.now() * 1_000
  private readonly byPlace = new Map<string, Array<Reply>>()
  private readonly keys = new Map<string, Set<string>>()
  private readonly listeners = new Map<string, Set<Listener>>()

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
    const set = this.listeners.get(place) ?? new Set<Listener>()
    set.add(listener)
    this.listeners.set(place, set)
    return () => {
      set.delete(listener)
      if (set.size === 0) this.listeners.delete(place)
    }
  }
}
