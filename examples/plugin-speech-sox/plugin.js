// A speech synthesizer (docs/plugins/hooks.md, speechSynthesizer): a tone of 0.18 s per word of
// the reply, made by sox (Debian `sox`) as WAV on stdout. `voice` is the tone's pitch in Hz
// (default 440). A workspace uses it with `voice: { enabled: true, synthesizer: tones }`.
import { spawn } from "node:child_process"

const SECONDS_PER_WORD = 0.18

const sox = (args) =>
  new Promise((resolve, reject) => {
    const child = spawn("sox", args, { stdio: ["ignore", "pipe", "pipe"] })
    const chunks = []
    child.stdout.on("data", (c) => chunks.push(c))
    child.on("error", reject)
    child.on("close", (code) => (code === 0 ? resolve(new Uint8Array(Buffer.concat(chunks))) : reject(new Error(`sox exited ${code}`))))
  })

export default {
  name: "speech-sox",
  version: "0.1.0",
  description: "A tone as long as the spoken reply has words.",
  speechSynthesizer: () => ({
    name: "tones",
    synthesize: async ({ text, voice }) => {
      const words = Math.max(1, text.split(/\s+/).filter((w) => w !== "").length)
      const pitch = /^\d{2,5}$/.test(voice ?? "") ? voice : "440"
      const audio = await sox(["-n", "-r", "16000", "-c", "1", "-b", "16", "-t", "wav", "-", "synth", String(words * SECONDS_PER_WORD), "sine", pitch, "vol", "0.5"])
      return { format: "wav", audio }
    }
  })
}
