import { Clock, Effect, Queue } from "effect"

/** What a deadline runs when it passes. */
export interface Expirable {
  expire(): void
}

/** One registered deadline (a class: no closures per call on the hot path). */
export class Deadline {
  done = false
  constructor(readonly at: number, readonly target: Expirable, private readonly onCancel: (d: Deadline) => void) {}
  /** The deadline will not fire (a no-op once it has). */
  cancel() {
    if (this.done) return
    this.done = true
    this.onCancel(this)
  }
}
type Entry = Deadline

/** A timer owned by one fiber for every call: registering a deadline is a heap push, not a fork. */
export interface Deadlines {
  /** Runs `target.expire()` at Clock time `at` unless the deadline is cancelled first. */
  readonly add: (at: number, target: Expirable) => Deadline
  readonly now: () => number
}

const less = (a: Entry, b: Entry) => a.at < b.at

/**
 * One scoped fiber sleeps (on the Effect Clock, so TestClock drives it) until the earliest live
 * deadline and fires it. Cancelled entries are dropped lazily, and the heap is rebuilt when
 * they outnumber the live ones, so memory stays proportional to the calls in flight.
 */
export const makeDeadlines = Effect.gen(function* () {
  const clock = yield* Effect.clock
  const wake = yield* Queue.sliding<void>(1)
  let heap: Array<Entry> = []
  let live = 0
  let sleepingUntil = Number.POSITIVE_INFINITY

  const up = (i: number) => {
    const e = heap[i]!
    while (i > 0) {
      const p = (i - 1) >> 1
      if (!less(e, heap[p]!)) break
      heap[i] = heap[p]!
      i = p
    }
    heap[i] = e
  }
  const down = (i: number) => {
    const n = heap.length
    const e = heap[i]!
    for (;;) {
      const l = 2 * i + 1
      if (l >= n) break
      const c = l + 1 < n && less(heap[l + 1]!, heap[l]!) ? l + 1 : l
      if (!less(heap[c]!, e)) break
      heap[i] = heap[c]!
      i = c
    }
    heap[i] = e
  }
  const pop = () => {
    const top = heap[0]!
    const last = heap.pop()!
    if (heap.length > 0) {
      heap[0] = last
      down(0)
    }
    return top
  }
  const compact = () => {
    heap = heap.filter((e) => !e.done)
    for (let i = (heap.length >> 1) - 1; i >= 0; i--) down(i)
  }

  const loop = Effect.gen(function* () {
    for (;;) {
      while (heap.length > 0 && heap[0]!.done) pop()
      if (heap.length === 0) {
        sleepingUntil = Number.POSITIVE_INFINITY
        yield* Queue.take(wake)
        continue
      }
      const top = heap[0]!
      const now = clock.unsafeCurrentTimeMillis()
      if (top.at <= now) {
        pop()
        top.done = true
        live--
        top.target.expire()
        continue
      }
      sleepingUntil = top.at
      yield* Effect.raceFirst(Clock.sleep(top.at - now), Queue.take(wake))
    }
  })
  yield* Effect.forkScoped(loop)

  const cancelled = () => {
    live--
    if (heap.length > 1024 && heap.length > 4 * live) compact()
  }
  const deadlines: Deadlines = {
    now: () => clock.unsafeCurrentTimeMillis(),
    add: (at, target) => {
      const entry = new Deadline(at, target, cancelled)
      heap.push(entry)
      up(heap.length - 1)
      live++
      if (at < sleepingUntil) {
        sleepingUntil = at
        wake.unsafeOffer(undefined)
      }
      return entry
    }
  }
  return deadlines
})
