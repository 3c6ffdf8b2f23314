import { Context, Effect, Layer, Option } from "effect"
import type { Delivery } from "../domain/delivery.js"
import type { WorkspaceId } from "../domain/ids.js"
import type { NativeChannel, OutboundAudio } from "../contracts/channel.js"

export declare namespace ReplyAudio {
  /**
   * The spoken form of replies (src/speech/Speech.ts makes it). The outbox asks right before it
   * hands a delivery to a channel that carries audio: the text is recorded first, so a synthesis
   * that fails or hangs costs the audio only, never the text.
   */
  export interface Service {
    /**
     * The audio of a delivery in `format`: none unless it is a reply of a workspace that speaks
     * (`voice.enabled`), and none when it could not be made (logged). The same bytes every time.
     */
    readonly audioFor: (delivery: Delivery, workspace: WorkspaceId, format: NonNullable<NativeChannel["audio"]>) => Effect.Effect<Option.Option<OutboundAudio>>
  }
}

export class ReplyAudio extends Context.Tag("pynchy/ReplyAudio")<ReplyAudio, ReplyAudio.Service>() {
  /** No spoken replies (hosts and tests without speech). */
  static readonly layerNone = Layer.succeed(ReplyAudio, ReplyAudio.of({ audioFor: () => Effect.succeed(Option.none()) }))
}
