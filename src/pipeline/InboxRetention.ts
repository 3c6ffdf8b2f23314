/**
 * Runs inbox retention (src/files/inbox-retention.ts) over every workspace, the registered ones
 * too: as a step of the start, then every 6 hours for as long as the host runs.
 * `files.inboxRetentionDays: 0` turns it off.
 */
import { Clock, Duration, Effect, Layer } from "effect"
import { HostConfig } from "../config/HostConfig.js"
import { unsafeWorkspaceFolder, workspaceDirOf } from "../config/workspace-folder.js"
import { sweepInbox } from "../files/inbox-retention.js"
import { Workspaces } from "./Workspaces.js"

const DAY = 86_400_000
const EVERY = Duration.hours(6)

export const InboxRetention = {
  /** Sweeps every workspace's inbox at start, then every 6 hours for as long as the host runs. */
  layer: Layer.scopedDiscard(
    Effect.gen(function* () {
      const { config, dataDir } = yield* HostConfig
      const workspaces = yield* Workspaces
      const days = config.files.inboxRetentionDays
      if (days === 0) return
      const sweepAll = Effect.gen(function* () {
        const cutoff = (yield* Clock.currentTimeMillis) - days * DAY
        let removed = 0
        for (const w of yield* workspaces.list) {
          const dir = workspaceDirOf(dataDir, w)
          // A folder the pipeline would not save into is not swept either.
          if (unsafeWorkspaceFolder(dataDir, dir) === undefined) removed += (yield* sweepInbox(dir, cutoff)).removed
        }
        if (removed > 0) yield* Effect.logInfo("old inbox files removed").pipe(Effect.annotateLogs({ removed, retentionDays: days }))
      })
      const sweep = sweepAll.pipe(Effect.catchAllDefect((d) => Effect.logWarning("inbox retention sweep failed", d)))
      // The first sweep is part of the start (it examines at most MAX_ENTRIES per workspace), so
      // what is swept is gone before the host takes a message; the next ones run beside it.
      yield* sweep
      yield* Effect.forkScoped(Effect.forever(Effect.zipRight(Effect.sleep(EVERY), sweep)))
    })
  )
}
