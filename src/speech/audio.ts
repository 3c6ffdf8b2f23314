/**
 * Audio formats: what a synthesizer may answer, what a channel may want, and the conversions
 * between them (opus-tools: `opusenc` WAV → OGG/Opus, `opusdec` OGG/Opus → WAV).
 */
import type { AudioFormat } from "../domain/audio.js"
import { pipeThrough } from "./pipe.js"

export type { AudioFormat }

export const AUDIO_FORMATS: ReadonlyArray<AudioFormat> = ["wav", "ogg_opus"]

export const mimeTypeOf = (format: AudioFormat): string => (format === "wav" ? "audio/wav" : "audio/ogg")
export const extensionOf = (format: AudioFormat): string => (format === "wav" ? "wav" : "ogg")

const ascii = (bytes: Uint8Array, at: number, text: string) => Buffer.from(bytes.subarray(at, at + text.length)).toString("latin1") === text

/** Whether the bytes look like the format they claim (the header only: a decoder checks the rest). */
export const looksLike = (format: AudioFormat, bytes: Uint8Array): boolean =>
  format === "wav" ? bytes.length > 44 && ascii(bytes, 0, "RIFF") && ascii(bytes, 8, "WAVE") : bytes.length > 28 && ascii(bytes, 0, "OggS") && ascii(bytes, 28, "OpusHead")

/**
 * A WAV whose RIFF and `data` sizes are those of the bytes at hand. Programs that write WAV to a
 * pipe (espeak-ng --stdout, opusdec) cannot seek back, so they leave placeholder sizes, which some
 * players and `sox --info` read as a length of zero.
 */
export const withExactSizes = (wav: Uint8Array): Uint8Array => {
  const out = new Uint8Array(wav)
  const view = new DataView(out.buffer, out.byteOffset, out.byteLength)
  view.setUint32(4, out.length - 8, true)
  let at = 12
  while (at + 8 <= out.length) {
    const id = Buffer.from(out.subarray(at, at + 4)).toString("latin1")
    if (id === "data") {
      view.setUint32(at + 4, out.length - at - 8, true)
      break
    }
    at += 8 + view.getUint32(at + 4, true)
  }
  return out
}

/** The audio in `target`'s format: as it is when it already is, else through opusenc or opusdec. */
export const convert = (audio: { readonly format: AudioFormat; readonly audio: Uint8Array }, target: AudioFormat, signal?: AbortSignal): Promise<Uint8Array> => {
  if (audio.format === target) return Promise.resolve(target === "wav" ? withExactSizes(audio.audio) : audio.audio)
  return target === "ogg_opus"
    ? pipeThrough("opusenc", ["--quiet", "--speech", "-", "-"], audio.audio, signal)
    : pipeThrough("opusdec", ["--quiet", "--force-wav", "-", "-"], audio.audio, signal).then(withExactSizes)
}
