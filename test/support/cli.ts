import { spawn } from "node:child_process"
import * as path from "node:path"

export const BIN = path.resolve(import.meta.dirname, "../../bin/pynchy.js")

/** The test process's env without any PYNCHY_ settings of the developer's shell. */
export const cleanEnv = (): Record<string, string> =>
  Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => !e[0].startsWith("PYNCHY_") && e[1] !== undefined))

export interface CliResult {
  /** The exit code; null when the process was killed (the 60 s limit, or a signal). */
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/**
 * Runs the built CLI to completion in `cwd` with extra env. Asynchronous on purpose: a test
 * worker blocked in spawnSync cannot answer vitest's RPC, and under load a slow CLI start made
 * the worker miss its 60 s `onTaskUpdate` deadline.
 */
export const runCli = (args: ReadonlyArray<string>, options: { cwd: string; env?: Record<string, string>; input?: string }): Promise<CliResult> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: options.cwd, env: { ...cleanEnv(), ...options.env }, stdio: ["pipe", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (s: string) => (stdout += s))
    child.stderr.setEncoding("utf8").on("data", (s: string) => (stderr += s))
    const limit = setTimeout(() => child.kill("SIGKILL"), 60_000)
    child.on("error", (e) => {
      clearTimeout(limit)
      reject(e)
    })
    child.on("close", (code) => {
      clearTimeout(limit)
      resolve({ code, stdout, stderr })
    })
    // A child that exits before reading its input closes the pipe: that is not the test's error.
    child.stdin.on("error", () => {})
    child.stdin.end(options.input ?? "")
  })
