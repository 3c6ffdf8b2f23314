/**
 * The startup steps that exist only to order others (ARCHITECTURE.md, "Startup"): each is a
 * marker service, and depending on it orders a layer after the step. Together here so the order
 * reads in one place; layers/stack.ts composes them.
 */
import { Context, Effect, Layer } from "effect"
import type { Turn } from "../domain/turn.js"
import { Recovery } from "../pipeline/Recovery.js"
import { ConnectionRuntimes } from "../runtimes/ConnectionRuntimes.js"

export declare namespace RecoveredTurns {
  /**
   * Startup step 4 has happened: orphan delivery claims are released, and these turns survived
   * (their executor is alive) with their claims kept.
   */
  export interface Service {
    readonly survivors: ReadonlyArray<Turn>
  }
}

export class RecoveredTurns extends Context.Tag("pynchy/RecoveredTurns")<RecoveredTurns, RecoveredTurns.Service>() {
  static readonly layer = Layer.effect(
    RecoveredTurns,
    Effect.map(Effect.flatMap(Recovery, (r) => r.releaseOrphanClaims), (report) => ({ survivors: report.survivors }))
  )
}

/**
 * Startup steps 7 and 8: the connection runtimes start, in order, each ready before the next.
 * It needs RecoveredTurns, so orphan claims are released before the first start.
 */
export const connectionRuntimesLayer = Layer.unwrapEffect(Effect.as(RecoveredTurns, ConnectionRuntimes.layer))

export declare namespace Dispatched {
  /** Startup step 9 has happened: interrupted turns are dispatched, survivors re-adopted. */
  export interface Service {
    readonly conversations: number
  }
}

export class Dispatched extends Context.Tag("pynchy/Dispatched")<Dispatched, Dispatched.Service>() {}

/**
 * Startup step 9: interrupted turns are dispatched and surviving ones re-adopted. It needs
 * ConnectionRuntimes, so it happens only after every runtime reported ready.
 */
export const dispatchLayer = Layer.effect(
  Dispatched,
  Effect.gen(function* () {
    yield* ConnectionRuntimes
    const { survivors } = yield* RecoveredTurns
    const recovery = yield* Recovery
    const { conversations } = yield* recovery.dispatchInterrupted(survivors)
    return { conversations }
  })
)
