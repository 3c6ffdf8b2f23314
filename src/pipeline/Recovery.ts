import { Context, Effect, Layer } from "effect"
import { TurnStore } from "../db/TurnStore.js"
import type { Turn } from "../domain/turn.js"
import { HostIdentity } from "./HostIdentity.js"
import { ExecutorLiveness } from "./AgentExecutor.js"
import { Outbox } from "./Outbox.js"
import { TurnQueue } from "./TurnQueue.js"

export interface ReleaseReport {
  readonly interrupted: number
  readonly releasedClaims: number
  readonly survivors: ReadonlyArray<Turn>
}

export declare namespace Recovery {
  /** The two recovery steps; the host orders them around the connection runtimes. */
  export interface Service {
    /**
     * Part 1: turns of earlier epochs whose executor is gone become interrupted and their claims
     * go back to pending; turns whose executor survives keep their claims and move to this epoch.
     */
    readonly releaseOrphanClaims: Effect.Effect<ReleaseReport>
    /** Part 2: open dispatch (interrupted and queued turns, pending messages), re-adopt survivors, resume deliveries. */
    readonly dispatchInterrupted: (survivors: ReadonlyArray<Turn>) => Effect.Effect<{ readonly conversations: number; readonly deliveries: number }>
  }
}

export class Recovery extends Context.Tag("pynchy/Recovery")<Recovery, Recovery.Service>() {
  static readonly make = Effect.gen(function* () {
    const identity = yield* HostIdentity
    const turns = yield* TurnStore
    const liveness = yield* ExecutorLiveness
    const queue = yield* TurnQueue
    const outbox = yield* Outbox

    return Recovery.of({
      releaseOrphanClaims: Effect.gen(function* () {
        const result = yield* turns.releaseOrphans(identity.epoch, liveness.isAlive)
        yield* Effect.logInfo("recovery: orphan claims released").pipe(
          Effect.annotateLogs({ interrupted: result.interrupted.length, releasedClaims: result.releasedClaims, survivors: result.survivors.length })
        )
        return { interrupted: result.interrupted.length, releasedClaims: result.releasedClaims, survivors: result.survivors }
      }).pipe(Effect.withSpan("Recovery.releaseOrphanClaims")),
      dispatchInterrupted: (survivors) =>
        Effect.gen(function* () {
          const adopted = yield* Effect.forEach(survivors, (turn) =>
            Effect.map(turns.claimsOf(turn.id), (messageIds) => ({ turn, messageIds, executor: turn.owner!.executor })))
          yield* queue.adopt(adopted)
          const conversations = yield* queue.open
          const deliveries = yield* outbox.resumePending()
          yield* Effect.logInfo("recovery: dispatch open").pipe(Effect.annotateLogs({ conversations, deliveries, adopted: adopted.length }))
          return { conversations, deliveries }
        }).pipe(Effect.withSpan("Recovery.dispatchInterrupted"))
    })
  })

  static readonly layer = Layer.effect(Recovery, Recovery.make)
}
