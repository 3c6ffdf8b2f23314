import { Context, Effect, Layer } from "effect"
import type { ConversationId } from "../domain/ids.js"

export declare namespace DispatchGate {
  /**
   * Which conversations this host may start turns for. One host: all of them (`DispatchGate.all`).
   * A cluster host admits only the conversations of the connections it holds (src/cluster).
   */
  export interface Service {
    readonly admits: (conversationId: ConversationId) => Effect.Effect<boolean>
  }
}

export class DispatchGate extends Context.Tag("pynchy/DispatchGate")<DispatchGate, DispatchGate.Service>() {
  /** A host alone: every conversation is its own. */
  static readonly all = Layer.succeed(DispatchGate, DispatchGate.of({ admits: () => Effect.succeed(true) }))
}
