/**
 * The built-in speech synthesizer: espeak-ng (Debian `espeak-ng`), which writes WAV to stdout.
 * The text goes in on stdin, never on a command line. A workspace's `voice.voice` is an espeak-ng
 * voice name (`en`, `en-us`, `de`, ...); espeak-ng's default otherwise. Not installed: each call
 * fails with the reason (the reply's text still goes out), and `pynchy doctor` says so.
 */
import { definePlugin, type SpeechAudio, type SpeechRequest, type SpeechSynthesizer } from "../contracts/plugin.js"
import { pipeThrough } from "../speech/pipe.js"
import { DEFAULT_SYNTHESIZER } from "../speech/synthesize.js"

export const espeak: SpeechSynthesizer = {
  name: DEFAULT_SYNTHESIZER,
  synthesize: async (request: SpeechRequest): Promise<SpeechAudio> => ({
    format: "wav",
    audio: await pipeThrough("espeak-ng", ["--stdout", "--stdin", ...(request.voice !== undefined ? ["-v", request.voice] : [])], request.text)
  })
}

export default definePlugin({
  name: "speech",
  description: "Spoken replies with espeak-ng (WAV; OGG/Opus through opus-tools where a platform wants it)",
  speechSynthesizer: () => espeak
})
