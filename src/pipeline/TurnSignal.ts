import { Context, type Effect } from "effect"
import type { ConversationId } from "../domain/ids.js"

export declare namespace TurnSignal {
  /**
   * "Something may be pending for this conversation." In the host it is the turn queue; in a
   * separate process (`pynchy send`) it pokes the running host's control socket.
   */
  export interface Service {
    readonly signal: (conversationId: ConversationId) => Effect.Effect<void>
  }
}

export class TurnSignal extends Context.Tag("pynchy/TurnSignal")<TurnSignal, TurnSignal.Service>() {}
