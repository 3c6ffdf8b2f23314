/** Starting a sandbox process: detached (its own process group, killed as one), stderr into runner.log in the host-only folder. */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import type { SandboxExit, SandboxHandle } from "../runtime.js"
import { processId } from "./procinfo.js"

export interface SpawnOptions {
  readonly command: string
  readonly args: ReadonlyArray<string>
  readonly env: Record<string, string>
  readonly cwd: string
  /** stdout and stderr go to `<hostDir>/runner.log` (host-only: the agent cannot plant a link there). */
  readonly hostDir: string
  /** Arguments handed over on fd 3, NUL-separated (bwrap `--args 3`): never on a command line `ps` shows. */
  readonly argsFd?: ReadonlyArray<string>
  /** Called once the process has ended (cleanup of cgroups, etc.). */
  readonly onExit?: () => void
  /** The liveness id; default `<pid>:<starttime>`. */
  readonly idOf?: (pid: number) => string
}

export const spawnSandbox = (options: SpawnOptions): Promise<SandboxHandle> =>
  new Promise((resolve, reject) => {
    const log = fs.openSync(path.join(options.hostDir, "runner.log"), fs.constants.O_WRONLY | fs.constants.O_APPEND | fs.constants.O_CREAT | fs.constants.O_NOFOLLOW, 0o600)
    let child
    try {
      child = spawn(options.command, options.args, {
        cwd: options.cwd,
        env: options.env,
        detached: true,
        stdio: options.argsFd === undefined ? ["ignore", log, log] : ["ignore", log, log, "pipe"]
      })
    } catch (e) {
      fs.closeSync(log)
      return reject(e)
    }
    // The child holds its own copy of the descriptor.
    fs.closeSync(log)
    if (options.argsFd !== undefined) {
      const pipe = child.stdio[3] as NodeJS.WritableStream | null
      pipe?.on("error", () => {})
      pipe?.end(options.argsFd.map((a) => `${a}\0`).join(""))
    }
    const exited = new Promise<SandboxExit>((settle) => {
      child.once("exit", (code, signal) => {
        options.onExit?.()
        settle({ code, signal })
      })
    })
    child.once("error", (e) => reject(e))
    child.once("spawn", () => {
      const pid = child.pid!
      resolve({ id: (options.idOf ?? processId)(pid), exited })
    })
  })
