import { Context, Effect, Layer } from "effect"
import type { Turn } from "../domain/turn.js"
import { Recovery } from "../pipeline/Recovery.js"

export declare namespace RecoveredTurns {
  /**
   * Startup step 4 has happened: orphan delivery claims are released, and these turns survived
   * (their executor is alive) with their claims kept. Depending on this service orders a step after it.
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

export declare namespace Dispatched {
  /** Startup step 9 has happened: interrupted turns are dispatched, survivors re-adopted. */
  export interface Service {
    readonly conversations: number
  }
}

export class Dispatched extends Context.Tag("pynchy/Dispatched")<Dispatched, Dispatched.Service>() {}
