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
  /** Bytes for the following descriptors (4, 5, ...), each a pipe closed after its bytes (bwrap `--seccomp 4`). */
  readonly dataFds?: ReadonlyArray<Uint8Array>
  /** Called once the process has ended (cleanup of cgroups, etc.); `exited` settles after it. */
  readonly onExit?: () => unknown
  /** The liveness id; default `<pid>:<starttime>`. */
  readonly idOf?: (pid: number) => string
}

export const spawnSandbox = (options: SpawnOptions): Promise<SandboxHandle> =>
  new Promise((resolve, reject) => {
    const log = fs.openSync(path.join(options.hostDir, "runner.log"), fs.constants.O_WRONLY | fs.constants.O_APPEND | fs.constants.O_CREAT | fs.constants.O_NOFOLLOW, 0o600)
    const payloads: Array<Uint8Array> = [
      ...(options.argsFd !== undefined ? [Buffer.from(options.argsFd.map((a) => `${a}\0`).join(""))] : []),
      ...(options.dataFds ?? [])
    ]
    if (options.argsFd === undefined && payloads.length > 0) return reject(new Error("dataFds need argsFd (they start at fd 4)"))
    let child
    try {
      child = spawn(options.command, options.args, {
        cwd: options.cwd,
        env: options.env,
        detached: true,
        stdio: ["ignore", log, log, ...payloads.map(() => "pipe" as const)]
      })
    } catch (e) {
      fs.closeSync(log)
      return reject(e)
    }
    // The child holds its own copy of the descriptor.
    fs.closeSync(log)
    payloads.forEach((bytes, i) => {
      const pipe = child.stdio[3 + i] as NodeJS.WritableStream | null
      pipe?.on("error", () => {})
      pipe?.end(bytes)
    })
    const exited = new Promise<SandboxExit>((settle) => {
      child.once("exit", (code, signal) => {
        void Promise.resolve()
          .then(() => options.onExit?.())
          .catch(() => undefined)
          .then(() => settle({ code, signal }))
      })
    })
    child.once("error", (e) => reject(e))
    child.once("spawn", () => {
      const pid = child.pid!
      resolve({ id: (options.idOf ?? processId)(pid), exited })
    })
  })
