/** Decoding audio the way a listener would: sox for WAV, opusdec (to WAV) then sox for OGG/Opus. */
import { execFileSync, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { tempDir } from "../support/db.js"

/** The duration in seconds sox decodes from the bytes (0 when there is nothing to decode). */
export const decodedSeconds = (bytes: Uint8Array, format: "wav" | "ogg_opus"): number => {
  const dir = tempDir()
  const wav = path.join(dir, "audio.wav")
  if (format === "wav") fs.writeFileSync(wav, bytes)
  else {
    const ogg = path.join(dir, "audio.ogg")
    fs.writeFileSync(ogg, bytes)
    execFileSync("opusdec", ["--quiet", ogg, wav])
  }
  // `stat` decodes every sample (it does not trust the header's sizes); it reports on stderr.
  const stat = spawnSync("sox", [wav, "-n", "stat"], { encoding: "utf8" })
  const match = /Length \(seconds\):\s+([\d.]+)/.exec(stat.stderr)
  return match === null ? 0 : Number(match[1])
}
