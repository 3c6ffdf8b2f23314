/**
 * Observers read the event bus. Each gets every event in order through a bounded queue of its
 * own: the bus puts each event on that queue as it is published (never waiting: a full queue
 * drops the event and counts it), and a consumer fiber hands what is queued to the observer. A
 * slow observer therefore loses events, a failing one loses the events it failed on, and neither
 * slows or fails anything that publishes.
 */
import { Cause, Chunk, Context, Duration, Effect, Fiber, Layer, Queue, type Scope } from "effect"
import { HostConfig } from "../config/HostConfig.js"
import { EventBus } from "../events/EventBus.js"
import type { HostEvent } from "../events/HostEvent.js"

/** Resumes after the event loop's current turn: whatever is ready to run (microtasks, fibers, I/O callbacks) runs first. */
const nextLoopTurn = Effect.async<void>((resume) => {
  const handle = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(handle))
})
/** How long an observer may take at shutdown to handle what is still queued. */
const FLUSH_TIMEOUT = Duration.seconds(5)

export interface EventObserver {
  readonly name: string
  /** Most events one call of `handle` gets: the event log writes up to 512 in one transaction; a plugin's observer gets 1. */
  readonly maxBatch: number
  /**
   * Handles events only once the work that is ready to run has run (one event-loop turn later):
   * a writer of batches (the event log) then costs one transaction per burst and does not run
   * between the steps of the turn it records. Not a time window, so a TestClock cannot stall it.
   */
  readonly deferred?: boolean
  /** Events it may have waiting before new ones are dropped; default `observers.queueSize`. */
  readonly capacity?: number
  /**
   * Handles queued events, oldest first. A failure or defect counts the batch as failed; the
   * next batch comes as usual.
   */
  readonly handle: (events: ReadonlyArray<HostEvent>) => Effect.Effect<void, unknown>
}

/** What `pynchy status` shows per observer. */
export interface ObserverStats {
  readonly name: string
  /** Handled without failure. */
  readonly handled: number
  /** Dropped because the observer's queue was full. */
  readonly dropped: number
  /** Handed to the observer, which failed on them. */
  readonly failed: number
  /** Waiting in its queue now. */
  readonly queued: number
}

export declare namespace Observers {
  export interface Service {
    /**
     * Attaches an observer for the life of the current scope: every event published from now on
     * reaches it, in order, unless its queue is full. When the scope closes, what is queued is
     * handled (within 5 seconds) before the observer is let go.
     */
    readonly attach: (observer: EventObserver) => Effect.Effect<void, never, Scope.Scope>
    readonly stats: Effect.Effect<ReadonlyArray<ObserverStats>>
  }
}

export class Observers extends Context.Tag("pynchy/Observers")<Observers, Observers.Service>() {
  static readonly make = Effect.gen(function* () {
    const bus = yield* EventBus
    const { config } = yield* HostConfig
    const capacity = config.observers.queueSize
    const counters = new Map<string, { handled: number; dropped: number; failed: number; queue: Queue.Queue<HostEvent> }>()

    const attach = (observer: EventObserver) =>
      Effect.gen(function* () {
        const queue = yield* Queue.dropping<HostEvent>(observer.capacity ?? capacity)
        const counts = { handled: 0, dropped: 0, failed: 0, queue }
        counters.set(observer.name, counts)
        yield* bus.attach((event) => {
          if (!queue.unsafeOffer(event)) counts.dropped++
        })
        const handle = (events: Chunk.Chunk<HostEvent>) => {
          const batch = Chunk.toReadonlyArray(events)
          return observer.handle(batch).pipe(
            Effect.matchCauseEffect({
              onSuccess: () => Effect.sync(() => void (counts.handled += batch.length)),
              onFailure: (cause) =>
                Effect.suspend(() => {
                  const first = counts.failed === 0
                  counts.failed += batch.length
                  return first && !Cause.isInterruptedOnly(cause)
                    ? Effect.logWarning("an observer failed; its failures are counted in pynchy status").pipe(Effect.annotateLogs({ observer: observer.name, cause: Cause.pretty(cause).split("\n")[0] }))
                    : Effect.void
                })
            })
          )
        }
        // Taking is interruptible; a batch once taken is handled to the end (an observer that may
        // hang makes its own `handle` interruptible), a deferred one's wait for the next loop turn included.
        const next = (restore: <A>(e: Effect.Effect<A>) => Effect.Effect<A>) => observer.deferred !== true
          ? restore(Queue.takeBetween(queue, 1, observer.maxBatch))
          : Effect.flatMap(restore(Queue.take(queue)), (first) =>
            Effect.zipRight(nextLoopTurn, Effect.map(Queue.takeUpTo(queue, observer.maxBatch - 1), (rest) => Chunk.prepend(rest, first))))
        const consumer = yield* Effect.forkScoped(Effect.forever(Effect.uninterruptibleMask((restore) => Effect.flatMap(next(restore), handle))))
        yield* Effect.addFinalizer(() =>
          Effect.gen(function* () {
            yield* Fiber.interrupt(consumer)
            const drain: Effect.Effect<void> = Effect.flatMap(Queue.takeUpTo(queue, observer.maxBatch), (batch) => (Chunk.isEmpty(batch) ? Effect.void : Effect.zipRight(handle(batch), drain)))
            yield* drain.pipe(Effect.interruptible, Effect.timeout(FLUSH_TIMEOUT), Effect.ignore)
            counters.delete(observer.name)
          })
        )
      })

    const stats = Effect.flatMap(
      Effect.sync(() => [...counters.entries()]),
      (entries) =>
        Effect.forEach(entries, ([name, c]) => Effect.map(Queue.size(c.queue), (queued): ObserverStats => ({ name, handled: c.handled, dropped: c.dropped, failed: c.failed, queued })))
    )
    return Observers.of({ attach, stats })
  })

  static readonly layer = Layer.effect(Observers, Observers.make)
}
