/**
 * The speech hook's call (deadline, typed failures) and the audio formats: espeak-ng's WAV and
 * its OGG/Opus form decode to a duration that grows with the text.
 */
import { assert, describe, it } from "@effect/vitest"
import { Chunk, Duration, Effect, Either, Fiber, TestClock } from "effect"
import { espeak } from "../../src/builtins/speech.js"
import { convert, looksLike } from "../../src/speech/audio.js"
import { synthesize } from "../../src/speech/synthesize.js"
import type { SpeechSynthesizer } from "../../src/contracts/plugin.js"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { skipWithout } from "../support/system.js"
import { decodedSeconds } from "./support.js"

const SHORT = "Hello."
const LONG = "Hello. This reply is a good deal longer than the other one, so its audio lasts longer too, whatever the voice."

describe("speech synthesizer calls", () => {
  it.effect("a synthesizer that hangs misses the deadline: synthesize_timeout (TestClock)", () =>
    Effect.gen(function* () {
      const hanging = { name: "hangs", synthesize: () => new Promise<never>(() => {}) }
      const fiber = yield* Effect.fork(Effect.either(synthesize(hanging, { text: "hi" }, Duration.seconds(3))))
      // The deadline's sleep must be registered before the clock moves past it.
      while (Chunk.isEmpty(yield* TestClock.sleeps())) yield* Effect.yieldNow()
      yield* TestClock.adjust(Duration.seconds(3))
      const result = yield* Fiber.join(fiber)
      assert.isTrue(Either.isLeft(result) && result.left.code === "synthesize_timeout" && result.left.synthesizer === "hangs")
    }))

  it.effect("one that throws is synthesize_failed; one that answers another shape or other bytes is invalid_audio", () =>
    Effect.gen(function* () {
      const throws = yield* Effect.either(synthesize({ name: "throws", synthesize: () => { throw new Error("no voice") } }, { text: "hi" }))
      assert.isTrue(Either.isLeft(throws) && throws.left.code === "synthesize_failed")
      assert.include(Either.isLeft(throws) ? throws.left.message : "", "no voice")
      const shape = yield* Effect.either(synthesize({ name: "shape", synthesize: () => ({ format: "mp3", audio: new Uint8Array(10) }) as never }, { text: "hi" }))
      assert.isTrue(Either.isLeft(shape) && shape.left.code === "invalid_audio")
      const bytes = yield* Effect.either(synthesize({ name: "bytes", synthesize: async () => ({ format: "wav" as const, audio: new Uint8Array(100) }) }, { text: "hi" }))
      assert.isTrue(Either.isLeft(bytes) && bytes.left.code === "invalid_audio")
    }))
})

describe.skipIf(skipWithout("espeak-ng", "apt-get install espeak-ng") || skipWithout("sox", "apt-get install sox") || skipWithout("opusenc", "apt-get install opus-tools"))("espeak-ng audio", () => {
  it.live("espeak-ng's WAV and its OGG/Opus form decode to a duration > 0 that grows with the text", () =>
    Effect.gen(function* () {
      const seconds = { wav: [] as Array<number>, ogg_opus: [] as Array<number> }
      for (const text of [SHORT, LONG]) {
        const audio = yield* synthesize(espeak, { text, voice: "en" })
        assert.strictEqual(audio.format, "wav")
        const wav = yield* Effect.promise(() => convert(audio, "wav"))
        const ogg = yield* Effect.promise(() => convert(audio, "ogg_opus"))
        assert.isTrue(looksLike("ogg_opus", ogg))
        seconds.wav.push(decodedSeconds(wav, "wav"))
        seconds.ogg_opus.push(decodedSeconds(ogg, "ogg_opus"))
      }
      for (const [short, long] of [seconds.wav, seconds.ogg_opus]) {
        assert.isAbove(short!, 0)
        assert.isAbove(long!, short!)
      }
    }))

  it.live("the example plugin-speech-sox answers WAV whose duration grows with the words", () =>
    Effect.gen(function* () {
      const file = path.resolve(import.meta.dirname, "../../examples/plugin-speech-sox/plugin.js")
      const plugin = (yield* Effect.promise(() => import(pathToFileURL(file).href) as Promise<{ default: { speechSynthesizer: () => SpeechSynthesizer } }>)).default
      const tones = plugin.speechSynthesizer()
      const [short, long] = yield* Effect.all([synthesize(tones, { text: "two words" }), synthesize(tones, { text: "four words this time", voice: "660" })])
      assert.isAbove(decodedSeconds(short.audio, "wav"), 0)
      assert.isAbove(decodedSeconds(long.audio, "wav"), decodedSeconds(short.audio, "wav"))
    }))
})
