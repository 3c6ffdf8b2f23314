import { Clock, Context, Effect, Layer } from "effect"
import { HostConfig } from "../config/HostConfig.js"
import { type LiveStatus as Snapshot, writeStatusFile } from "./status-file.js"

export declare namespace LiveStatus {
  /** What the running host publishes for `pynchy status` (a JSON file, replaced atomically). */
  export interface Service {
    readonly setState: (state: Snapshot["state"]) => Effect.Effect<void>
    /** Replaces the named sections given (runtimes, queue, gateway, ...) and republishes once. */
    readonly setSections: (values: Record<string, unknown>) => Effect.Effect<void>
  }
}

export class LiveStatus extends Context.Tag("pynchy/LiveStatus")<LiveStatus, LiveStatus.Service>() {
  static readonly layer = Layer.scoped(
    LiveStatus,
    Effect.gen(function* () {
      const { dataDir } = yield* HostConfig
      let state: Snapshot["state"] = "starting"
      const sections: Record<string, unknown> = {}
      // Publishing must never take the host down: a full disk only loses the status file.
      const publish = Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sync(() => writeStatusFile(dataDir, { pid: process.pid, state, updatedAt: now, sections }))).pipe(
        Effect.catchAllDefect((e) => Effect.logWarning("cannot write status.json", e))
      )
      yield* publish
      yield* Effect.addFinalizer(() => Effect.suspend(() => {
        state = "stopped"
        return publish
      }))
      return LiveStatus.of({
        setState: (s) => Effect.suspend(() => {
          state = s
          return publish
        }),
        setSections: (values) => Effect.suspend(() => {
          Object.assign(sections, values)
          return publish
        })
      })
    })
  )
}
