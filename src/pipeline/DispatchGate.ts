import { Context, type Effect } from "effect"
import type { ConversationId } from "../domain/ids.js"

export declare namespace DispatchGate {
  /**
   * Which conversations this host may start turns for. Absent (one host): all of them. A cluster
   * host admits only the conversations of the connections it holds (src/cluster).
   */
  export interface Service {
    readonly admits: (conversationId: ConversationId) => Effect.Effect<boolean>
  }
}

export class DispatchGate extends Context.Tag("pynchy/DispatchGate")<DispatchGate, DispatchGate.Service>() {}
