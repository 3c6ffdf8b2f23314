import { Args, Command, Options } from "@effect/cli"
import { Clock, Console, Effect, Option, Schema } from "effect"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { HostConfig } from "../../config/HostConfig.js"
import { DeployMarker, git, writeMarker } from "../../host/DeployRollback.js"
import { readStatusFile } from "../../host/status-file.js"
import { hostPackageRoot } from "../../plugins/paths.js"

export class DeployRefused extends Schema.TaggedError<DeployRefused>()("DeployRefused", { reason: Schema.String }) {
  override get message() {
    return `deploy refused: ${this.reason}`
  }
}

const rev = Args.text({ name: "revision" }).pipe(Args.withDescription("The git revision to run (a commit, tag or branch)."))
const repo = Options.directory("repo").pipe(Options.optional, Options.withDescription("The git checkout of the install (default: this package's folder)."))

const attempt = <A>(what: string, f: () => A) => Effect.try({ try: f, catch: (e) => new DeployRefused({ reason: `${what}: ${(e as Error).message.split("\n")[0]}` }) })

/**
 * Records previous and next version in `<dataDir>/deploy.json`, checks out the next one, builds
 * it, and stops the running host so the service manager restarts it. If that start fails while
 * the marker exists, the host checks out the previous commit and exits 75 (restart me).
 */
export const deploy = Command.make("deploy", { rev, repo }, ({ rev, repo }) =>
  Effect.gen(function* () {
    const { dataDir } = yield* HostConfig
    const dir = path.resolve(Option.getOrElse(repo, hostPackageRoot))
    const dirty = yield* attempt("not a git checkout", () => git(dir, ["status", "--porcelain", "--untracked-files=no"]))
    if (dirty !== "") return yield* new DeployRefused({ reason: `${dir} has uncommitted changes; commit or stash them first` })
    const previous = yield* attempt("cannot read HEAD", () => git(dir, ["rev-parse", "HEAD"]))
    const next = yield* attempt(`unknown revision '${rev}'`, () => git(dir, ["rev-parse", "--verify", `${rev}^{commit}`]))
    if (previous === next) return yield* Console.log(`already at ${next.slice(0, 12)}`)
    writeMarker(dataDir, DeployMarker.make({ previous, next, repo: dir, at: yield* Clock.currentTimeMillis }))
    yield* attempt(`checkout of ${next.slice(0, 12)} failed`, () => git(dir, ["checkout", "--quiet", "--detach", next]))
    if (fs.existsSync(path.join(dir, "package.json"))) {
      const lockChanged = git(dir, ["diff", "--name-only", previous, next, "--", "package-lock.json"]) !== ""
      if (lockChanged) yield* attempt("npm ci failed", () => execFileSync("npm", ["ci", "--no-audit", "--no-fund"], { cwd: dir, stdio: "inherit" }))
      else yield* attempt("build failed", () => execFileSync("npm", ["run", "build", "--if-present", "--silent"], { cwd: dir, stdio: "inherit" }))
    }
    yield* Console.log(`deployed ${previous.slice(0, 12)} -> ${next.slice(0, 12)} (marker ${path.join(dataDir, "deploy.json")})`)
    const live = readStatusFile(dataDir)
    if (live !== null && live.state !== "stopped") {
      process.kill(live.pid, "SIGTERM")
      yield* Console.log(`stopped the running host (pid ${live.pid}); the service manager starts the new version`)
    } else {
      yield* Console.log("no host is running: the next `pynchy start` runs the new version")
    }
  }).pipe(Effect.catchTag("DeployRefused", (e) => Console.error(e.message).pipe(Effect.zipRight(Effect.sync(() => (process.exitCode = 1))))))
).pipe(
  Command.withDescription("Check out another version and restart; a failed start rolls back to the previous commit."),
  Command.provide(HostConfig.layer)
)
