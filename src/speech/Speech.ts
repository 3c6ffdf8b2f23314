/**
 * Spoken replies (docs/channels.md "Spoken replies"). The outbox asks for a reply's audio right
 * before it hands the delivery to a channel that carries audio, so the text is recorded first and
 * a synthesis that fails or hangs costs the audio only, never the text. The audio is stored with
 * the delivery (DeliveryStore.storeAudio) before it is sent: every send of the delivery, after a
 * crash too, sends the same bytes, as one more part of it (src/channels/parts.ts).
 */
import { Duration, Effect, Layer, Option } from "effect"
import { DeliveryStore } from "../db/DeliveryStore.js"
import type { Delivery } from "../domain/delivery.js"
import type { OutboundAudio } from "../contracts/channel.js"
import { ReplyAudio } from "../pipeline/ReplyAudio.js"
import { Workspaces } from "../pipeline/Workspaces.js"
import type { AudioFormat } from "../domain/audio.js"
import { PluginRegistry } from "../plugins/PluginRegistry.js"
import { convert, mimeTypeOf } from "./audio.js"
import { DEFAULT_SYNTHESIZER, SpeechFailed, synthesize } from "./synthesize.js"

/**
 * The host's ReplyAudio: a workspace's `voice.synthesizer` (default `espeak`) from the plugin
 * registry, its answer converted to the channel's format, stored with the delivery. A failure
 * (`unknown_synthesizer`, `synthesize_failed`, `synthesize_timeout`, `invalid_audio`,
 * `convert_failed`) is logged with its code and gives no audio.
 */
export const makeSpeech = Effect.gen(function* () {
  const workspaces = yield* Workspaces
  const deliveries = yield* DeliveryStore
  const registry = yield* PluginRegistry

  const make = (delivery: Delivery, name: string, voice: string | undefined, format: AudioFormat, timeout: Duration.Duration) =>
    Effect.gen(function* () {
      const synthesizer = registry.find("speechSynthesizer", name)
      if (Option.isNone(synthesizer)) {
        return yield* new SpeechFailed({ code: "unknown_synthesizer", synthesizer: name, reason: "no plugin contributes a speech synthesizer of this name" })
      }
      const audio = yield* synthesize(synthesizer.value.value, { text: delivery.text, ...(voice !== undefined ? { voice } : {}) }, timeout)
      const bytes = yield* Effect.tryPromise({
        try: (signal) => convert(audio, format, signal),
        catch: (e) => new SpeechFailed({ code: "convert_failed", synthesizer: name, reason: e instanceof Error ? e.message : "conversion failed" })
      }).pipe(Effect.timeoutFail({
        duration: timeout,
        onTimeout: () => new SpeechFailed({ code: "convert_failed", synthesizer: name, reason: `no ${format} within the deadline` })
      }))
      return yield* deliveries.storeAudio(delivery.idempotencyKey, { format, bytes })
    })

  const audioFor: ReplyAudio.Service["audioFor"] = (delivery, workspaceId, format) =>
    Effect.gen(function* () {
      if (delivery.kind !== "reply" || delivery.text.trim() === "") return Option.none()
      const workspace = yield* workspaces.get(workspaceId)
      const voice = Option.getOrUndefined(workspace)?.voice
      if (voice === undefined || !voice.enabled) return Option.none()
      const name = voice.synthesizer ?? DEFAULT_SYNTHESIZER
      const stored = yield* deliveries.audioOf(delivery.idempotencyKey)
      const audio = Option.isSome(stored)
        ? stored.value
        : yield* make(delivery, name, voice.voice, format, Duration.seconds(voice.timeoutSeconds)).pipe(
          Effect.tapError((e) =>
            Effect.logWarning("spoken reply: no audio; the text goes out alone").pipe(
              Effect.annotateLogs({ delivery: delivery.idempotencyKey, code: e.code, synthesizer: e.synthesizer, reason: e.reason })
            )),
          Effect.option,
          Effect.map(Option.getOrUndefined)
        )
      if (audio === undefined || audio.format !== format) return Option.none()
      return Option.some<OutboundAudio>({ format, mimeType: mimeTypeOf(format), bytes: audio.bytes })
    }).pipe(Effect.withSpan("Speech.audioFor", { attributes: { "pynchy.delivery.key": delivery.idempotencyKey }, captureStackTrace: false }))

  return ReplyAudio.of({ audioFor })
})

export const speechLayer = Layer.effect(ReplyAudio, makeSpeech)
