import { Either, Schema } from "effect"
import * as path from "node:path"
import { recordingChannel } from "../channels/recording.js"
import { stdoutChannel } from "../channels/stdout.js"
import { problemsOf } from "../domain/problems.js"
import type { Channel } from "../contracts/channel.js"
import { connectionsOfKind } from "../plugins/connections.js"
import { definePlugin } from "../contracts/plugin.js"

const RecordingSettings = Schema.Struct({
  kind: Schema.Literal("recording"),
  file: Schema.NonEmptyString,
  idempotent: Schema.optionalWith(Schema.Boolean, { default: () => true }),
  delayMs: Schema.optional(Schema.Int.pipe(Schema.between(0, 60_000)))
})
const decodeRecording = Schema.decodeUnknownEither(RecordingSettings)

/**
 * The channels the core ships: `cli` prints replies on the host's stdout (the connection of
 * `pynchy send`), and every connection of kind `recording` gets a file-backed channel (tests,
 * crash drills). Bad settings are reported as this plugin's fault, with their paths.
 */
export default definePlugin({
  name: "core-channels",
  description: "stdout for the cli connection; file-backed recording channels",
  createChannel: ({ config }) => {
    const channels: Array<Channel> = [stdoutChannel("cli")]
    for (const { name, raw } of connectionsOfKind(config, "recording")) {
      const decoded = decodeRecording(raw, { errors: "all" })
      if (Either.isLeft(decoded)) {
        throw new Error(`connections.${name}: ${problemsOf(decoded.left).map((p) => `${p.path}: ${p.reason}`).join("; ")}`)
      }
      const s = decoded.right
      const dataDir = path.resolve(config.dataDir)
      channels.push(recordingChannel({ name, file: path.resolve(dataDir, s.file), idempotent: s.idempotent, ...(s.delayMs !== undefined ? { delayMs: s.delayMs } : {}) }))
    }
    return channels
  }
})
