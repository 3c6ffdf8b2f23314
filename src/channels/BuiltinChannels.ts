import { Effect, Layer, Schema } from "effect"
import * as path from "node:path"
import { HostConfig } from "../config/HostConfig.js"
import { Channels } from "../pipeline/Channels.js"
import { recordingChannel } from "./recording.js"
import { stdoutChannel } from "./stdout.js"

const RecordingSettings = Schema.Struct({
  kind: Schema.Literal("recording"),
  file: Schema.NonEmptyString,
  idempotent: Schema.optionalWith(Schema.Boolean, { default: () => true }),
  delayMs: Schema.optional(Schema.Int.pipe(Schema.between(0, 60_000)))
})

/**
 * Binds the channels the core ships for the host's lifetime: `cli` on stdout, and a recording
 * channel for every connection of kind `recording` (tests, crash drills).
 */
export const layer = Layer.scopedDiscard(
  Effect.gen(function* () {
    const { config, dataDir } = yield* HostConfig
    const channels = yield* Channels
    const unbind = yield* channels.bind(stdoutChannel("cli"))
    yield* Effect.addFinalizer(() => unbind)
    for (const [name, settings] of Object.entries(config.connections)) {
      if (settings.kind !== "recording") continue
      const s = yield* Schema.decodeUnknown(RecordingSettings)(settings).pipe(Effect.orDie)
      const channel = recordingChannel({ name, file: path.resolve(dataDir, s.file), idempotent: s.idempotent, ...(s.delayMs !== undefined ? { delayMs: s.delayMs } : {}) })
      const release = yield* channels.bind(channel)
      yield* Effect.addFinalizer(() => release)
    }
  })
)
