/**
 * One call of a speech synthesizer under a deadline, its answer decoded: `{ format, audio }` with
 * bytes that look like the format. A synthesizer that throws is `synthesize_failed`, one that
 * misses the deadline `synthesize_timeout`, one that answers another shape `invalid_audio`.
 */
import { Duration, Effect, Schema } from "effect"
import { invoke } from "../contracts/call-hook.js"
import type { SpeechAudio, SpeechRequest, SpeechSynthesizer } from "../contracts/plugin.js"
import { AUDIO_FORMATS, looksLike } from "./audio.js"

/** The synthesizer of a workspace whose `voice` names none: the built-in espeak-ng one (src/builtins/speech.ts). */
export const DEFAULT_SYNTHESIZER = "espeak"

/** How long one synthesis may take unless the caller says (a workspace's `voice.timeoutSeconds`). */
export const SYNTHESIZE_TIMEOUT = Duration.seconds(20)

export const SpeechFailureCode = Schema.Literal("synthesize_failed", "synthesize_timeout", "invalid_audio", "unknown_synthesizer", "convert_failed")
export type SpeechFailureCode = typeof SpeechFailureCode.Type

/** A reply's audio could not be made; its text goes out all the same. */
export class SpeechFailed extends Schema.TaggedError<SpeechFailed>()("SpeechFailed", {
  code: SpeechFailureCode,
  synthesizer: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `${this.code}: speech synthesizer '${this.synthesizer}': ${this.reason}`
  }
}

const Answer = Schema.Struct({
  format: Schema.Literal(...AUDIO_FORMATS),
  audio: Schema.Uint8ArrayFromSelf
})

export const synthesize = (
  synthesizer: SpeechSynthesizer,
  request: SpeechRequest,
  timeout: Duration.DurationInput = SYNTHESIZE_TIMEOUT
): Effect.Effect<SpeechAudio, SpeechFailed> => {
  const failed = (code: SpeechFailureCode, reason: string) => new SpeechFailed({ code, synthesizer: synthesizer.name, reason })
  return invoke(() => synthesizer.synthesize(request), timeout).pipe(
    Effect.mapError((f) =>
      f.code === "hook_timeout"
        ? failed("synthesize_timeout", `synthesize() gave no audio within ${Duration.format(Duration.decode(timeout))}`)
        : failed("synthesize_failed", `synthesize() failed: ${f.problem}`)),
    Effect.flatMap((answer) => Schema.decodeUnknown(Answer)(answer, { onExcessProperty: "ignore" }).pipe(
      Effect.mapError(() => failed("invalid_audio", "synthesize() answered something other than { format: 'wav' | 'ogg_opus', audio: Uint8Array }"))
    )),
    Effect.filterOrFail((a) => looksLike(a.format, a.audio), (a) => failed("invalid_audio", `synthesize() answered bytes that are not ${a.format}`)),
    Effect.withSpan("Speech.synthesize", { attributes: { "pynchy.speech.synthesizer": synthesizer.name }, captureStackTrace: false })
  )
}
