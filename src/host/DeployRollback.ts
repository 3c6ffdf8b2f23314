import { Context, Effect, Layer, Option, Schema } from "effect"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"

/** `<dataDir>/deploy.json`: written by `pynchy deploy` before the restart, cleared by a good start. */
export class DeployMarker extends Schema.Class<DeployMarker>("DeployMarker")({
  previous: Schema.String,
  next: Schema.String,
  repo: Schema.String,
  at: Schema.Number
}) {}

export const markerPath = (dataDir: string) => path.join(dataDir, "deploy.json")

export const readMarker = (dataDir: string): Option.Option<DeployMarker> => {
  try {
    return Option.some(Schema.decodeUnknownSync(Schema.parseJson(DeployMarker))(fs.readFileSync(markerPath(dataDir), "utf8")))
  } catch {
    return Option.none()
  }
}

export const writeMarker = (dataDir: string, marker: DeployMarker) => {
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 })
  const tmp = `${markerPath(dataDir)}.tmp`
  fs.writeFileSync(tmp, JSON.stringify(marker), { mode: 0o600 })
  fs.renameSync(tmp, markerPath(dataDir))
}

/** The start failed during a deploy and the previous version is checked out again. */
export class StartupRolledBack extends Schema.TaggedError<StartupRolledBack>()("StartupRolledBack", {
  previous: Schema.String,
  next: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `startup of ${this.next.slice(0, 12)} failed (${this.reason}); rolled back to ${this.previous.slice(0, 12)}: restart to run it`
  }
}

/** The exit code that asks a service manager to start the (rolled back) host again: EX_TEMPFAIL. */
export const ROLLBACK_EXIT_CODE = 75

export const git = (repo: string, args: ReadonlyArray<string>) =>
  execFileSync("git", ["-C", repo, ...args], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trim()

export declare namespace DeployRollback {
  export interface Service {
    /** A good start: the deploy is done, forget the marker. */
    readonly confirm: Effect.Effect<void>
    /** A failed start: if a deploy is in progress, go back to the previous version. */
    readonly rollback: (reason: string) => Effect.Effect<Option.Option<StartupRolledBack>>
  }
}

export class DeployRollback extends Context.Tag("pynchy/DeployRollback")<DeployRollback, DeployRollback.Service>() {
  /** Git-managed installs: check out the previous commit recorded by `pynchy deploy`. */
  static readonly layerGit = (dataDir: string) =>
    Layer.succeed(DeployRollback, {
      confirm: Effect.sync(() => fs.rmSync(markerPath(dataDir), { force: true })),
      rollback: (reason) =>
        Effect.gen(function* () {
          const marker = readMarker(dataDir)
          if (Option.isNone(marker)) return Option.none()
          const { previous, next, repo } = marker.value
          yield* Effect.try(() => git(repo, ["checkout", "--quiet", "--detach", previous])).pipe(
            Effect.tapError((e) => Effect.logError(`rollback to ${previous} failed`, e)),
            Effect.orDie
          )
          // The marker goes: the rolled-back version must not roll back again on its own failure.
          fs.rmSync(markerPath(dataDir), { force: true })
          yield* Effect.logError("startup failed during a deploy: rolled back").pipe(Effect.annotateLogs({ previous, next }))
          return Option.some(new StartupRolledBack({ previous, next, reason }))
        })
    })

  /** Library hosts: nothing to roll back. */
  static readonly layerNoop = Layer.succeed(DeployRollback, { confirm: Effect.void, rollback: () => Effect.succeedNone })
}
