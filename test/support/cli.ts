import { spawnSync } from "node:child_process"
import * as path from "node:path"

export const BIN = path.resolve(import.meta.dirname, "../../bin/pynchy.js")

/** The test process's env without any PYNCHY_ settings of the developer's shell. */
export const cleanEnv = (): Record<string, string> =>
  Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => !e[0].startsWith("PYNCHY_") && e[1] !== undefined))

/** Runs the built CLI to completion in `cwd` with extra env. */
export const runCli = (args: ReadonlyArray<string>, options: { cwd: string; env?: Record<string, string>; input?: string }) => {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    cwd: options.cwd,
    env: { ...cleanEnv(), ...options.env },
    input: options.input ?? "",
    encoding: "utf8",
    timeout: 60_000
  })
  return { code: r.status, stdout: r.stdout, stderr: r.stderr }
}
