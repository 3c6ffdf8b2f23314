import { Cause, Clock, Context, Duration, Effect, Layer } from "effect"
import { HostConfig } from "../config/HostConfig.js"
import { type AcquireRequest, TurnStore } from "../db/TurnStore.js"
import type { ConversationId } from "../domain/ids.js"
import { TurnOwner } from "../domain/turn.js"
import { EventBus } from "../events/EventBus.js"
import { HostIdentity } from "./HostIdentity.js"
import { AgentExecutor } from "./AgentExecutor.js"
import { DispatchGate } from "./DispatchGate.js"
import { type StartedTurn, TurnRunner } from "./TurnRunner.js"
import { TurnSignal } from "./TurnSignal.js"

export interface QueueStats {
  readonly open: boolean
  /** Conversations signalled and not yet looked at. */
  readonly waiting: number
  readonly running: number
  readonly capacity: number
  readonly dispatched: number
}

export declare namespace TurnQueue {
  /**
   * The turn dispatcher. The database is the truth; a signal only says "look at this
   * conversation". Waiting work stays in the database: memory holds at most one entry per
   * signalled conversation. One turn per conversation, at most `maxConcurrentTurns` at once.
   */
  export interface Service {
    /** Something may be pending for this conversation. Cheap; safe to repeat. */
    readonly signal: (conversationId: ConversationId) => Effect.Effect<void>
    /**
     * Opens dispatch (recovery part 2): every conversation with pending messages or a
     * queued/interrupted turn is signalled, then turns start. Before this, signals only collect.
     */
    readonly open: Effect.Effect<number>
    /** Waits for turns whose executor survived a restart (their claims were kept). */
    readonly adopt: (started: ReadonlyArray<Omit<StartedTurn, "epoch">>) => Effect.Effect<void>
    readonly stats: Effect.Effect<QueueStats>
  }
}

export class TurnQueue extends Context.Tag("pynchy/TurnQueue")<TurnQueue, TurnQueue.Service>() {
  static readonly make = Effect.gen(function* () {
    const { config } = yield* HostConfig
    const identity = yield* HostIdentity
    const turns = yield* TurnStore
    const runner = yield* TurnRunner
    const executor = yield* AgentExecutor
    const bus = yield* EventBus
    const capacity = config.limits.maxConcurrentTurns
    const gate = yield* DispatchGate
    const scope = yield* Effect.scope

    // Insertion-ordered: conversations are served in the order they were first signalled.
    const waiting = new Set<ConversationId>()
    const running = new Set<ConversationId>()
    // Signalled while their turn ran: they get one more look when it ends.
    const again = new Set<ConversationId>()
    let isOpen = false
    let dispatched = 0
    const wake = yield* Effect.makeLatch(false)
    const permits = yield* Effect.makeSemaphore(capacity)
    // Permits in use, mirrored so a batch can be sized without waiting.
    let busy = 0
    const take = (n: number) => Effect.zipRight(permits.take(n), Effect.sync(() => void (busy += n)))
    const release = (n: number) => Effect.suspend(() => {
      busy -= n
      return permits.release(n)
    })

    const signal = (conversationId: ConversationId) =>
      Effect.suspend(() => {
        if (running.has(conversationId)) {
          again.add(conversationId)
          return bus.publish({ type: "turn.queued", conversationId, running: true })
        }
        waiting.add(conversationId)
        return Effect.zipRight(bus.publish({ type: "turn.queued", conversationId, running: false }), wake.open)
      })

    /** Messages that arrived during the turn are the next turn's; a turn that did not complete is looked at again. */
    const finished = (conversationId: ConversationId, completed: boolean) =>
      Effect.suspend(() => {
        running.delete(conversationId)
        const lookAgain = again.delete(conversationId) || !completed
        return lookAgain ? signal(conversationId) : Effect.void
      })

    const retryAt = (conversationId: ConversationId, at: number) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sleep(Duration.millis(Math.max(0, at - now)))).pipe(Effect.zipRight(signal(conversationId)), Effect.forkIn(scope))

    const launch = (conversationId: ConversationId, started: StartedTurn) =>
      Effect.suspend(() => {
        running.add(conversationId)
        dispatched++
        let completed = false
        // A retry is not scheduled here: the next look finds the turn `Later` and sets its timer.
        return runner.run(started).pipe(
          Effect.tap((outcome) => {
            completed = outcome._tag === "Completed" || outcome._tag === "Blocked" || outcome._tag === "Failed"
          }),
          Effect.tapDefect((defect) => Effect.logError("a turn's run died", Cause.die(defect)).pipe(Effect.annotateLogs({ turn: started.turn.id }))),
          Effect.ensuring(Effect.zipRight(release(1), Effect.suspend(() => finished(conversationId, completed)))),
          Effect.forkIn(scope)
        )
      })

    /**
     * Waits for a free slot, then takes as many waiting conversations as there are free slots and
     * acquires them in one transaction (after a restart, or a burst, that is one commit for many turns).
     */
    const dispatchBatch = Effect.gen(function* () {
      yield* take(1)
      const extra = Math.min(capacity - busy, waiting.size - 1)
      if (extra > 0) yield* take(extra)
      const batch: Array<ConversationId> = []
      for (const c of waiting) {
        if (batch.length > Math.max(0, extra)) break
        batch.push(c)
      }
      const requests: Array<AcquireRequest> = []
      for (const conversationId of batch) {
        waiting.delete(conversationId)
        if (running.has(conversationId)) {
          // Signalled between its turn's claim and now: it gets one more look when that turn ends.
          again.add(conversationId)
          yield* release(1)
          continue
        }
        if (!(yield* gate.admits(conversationId))) {
          // Another host holds its connection: its work is that host's (the signal is dropped here).
          yield* release(1)
          continue
        }
        const executorId = yield* executor.allocate(conversationId)
        // Both fields are branded values already: no second validation on the dispatch path.
        requests.push({ conversationId, owner: TurnOwner.make({ epoch: identity.epoch, executor: executorId }, true) })
      }
      if (requests.length === 0) return
      const results = yield* turns.acquireMany(requests, yield* Clock.currentTimeMillis)
      for (let i = 0; i < requests.length; i++) {
        const { conversationId, owner } = requests[i]!
        const acquired = results[i]!
        switch (acquired._tag) {
          case "Started": {
            const { turn, messageIds, conversation, messages } = acquired
            yield* launch(conversationId, { turn, messageIds, executor: owner.executor, epoch: identity.epoch, loaded: { conversation, messages } })
            continue
          }
          case "Later":
            yield* retryAt(conversationId, acquired.at)
            break
        }
        yield* release(1)
      }
    })

    const loop = Effect.gen(function* () {
      while (true) {
        yield* wake.await
        yield* wake.close
        while (waiting.size > 0) yield* dispatchBatch
      }
    })

    const opened = yield* Effect.makeLatch(false)
    // A defect here would stop every turn: it is logged, never swallowed.
    yield* opened.await.pipe(
      Effect.zipRight(loop),
      Effect.tapErrorCause((cause) => Cause.isInterruptedOnly(cause) ? Effect.void : Effect.logError("the turn dispatcher stopped", cause)),
      Effect.forkScoped
    )

    return TurnQueue.of({
      signal,
      open: Effect.gen(function* () {
        const work = yield* turns.conversationsWithWork
        for (const c of work) waiting.add(c)
        isOpen = true
        yield* opened.open
        yield* wake.open
        return work.length
      }),
      adopt: (survivors) =>
        Effect.forEach(survivors, (s) =>
          Effect.gen(function* () {
            yield* take(1)
            yield* launch(s.turn.conversationId, { ...s, epoch: identity.epoch, adopted: true })
          }), { discard: true }),
      stats: Effect.sync(() => ({ open: isOpen, waiting: waiting.size, running: running.size, capacity, dispatched }))
    })
  })

  static readonly layer = Layer.scoped(TurnQueue, TurnQueue.make)

  /** The queue as the in-process turn signal. */
  static readonly signalLayer = Layer.effect(TurnSignal, Effect.map(TurnQueue, (q) => TurnSignal.of({ signal: q.signal })))
}

