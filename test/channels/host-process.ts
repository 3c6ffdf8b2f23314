/**
 * The real host as a child process (`node bin/pynchy.js start` with a given pynchy.yaml), for
 * kill -9 and restart tests, and a read-only look into its database.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import { Effect } from "effect"
import { BIN, type CliResult, cleanEnv, runCli } from "../support/cli.js"
import { tempDir } from "../support/db.js"
import { eventually } from "../support/eventually.js"

export interface HostProcess {
  readonly child: ChildProcess
  readonly stderr: () => string
}

const live = new Set<ChildProcess>()

/** Kills every host this module started that is still running (a safety net for afterAll). */
export const killAllHosts = () => {
  for (const child of live) child.kill("SIGKILL")
  live.clear()
}

/** Starts the host and resolves once it logged that it is ready. */
export const startHost = (dir: string, env: Record<string, string> = {}) =>
  new Promise<HostProcess>((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, "start"], {
      cwd: dir,
      env: { ...cleanEnv(), PYNCHY_CONFIG: path.join(dir, "pynchy.yaml"), PYNCHY_LOG_LEVEL: "info", ...env },
      stdio: ["ignore", "ignore", "pipe"]
    })
    live.add(child)
    child.once("exit", () => live.delete(child))
    let err = ""
    child.stderr!.setEncoding("utf8")
    child.stderr!.on("data", (d: string) => {
      err = (err + d).slice(-50_000)
      if (/INFO +ready epoch=/.test(err)) resolve({ child, stderr: () => err })
    })
    child.once("exit", (code, signal) => reject(new Error(`host exited (${code ?? signal}) before ready:\n${err.slice(-3000)}`)))
    child.once("error", reject)
  })

export const killHard = (host: HostProcess) =>
  new Promise<void>((resolve) => {
    if (host.child.exitCode !== null || host.child.signalCode !== null) return resolve()
    host.child.once("exit", () => resolve())
    host.child.kill("SIGKILL")
  })

export const stopHost = (host: HostProcess) =>
  new Promise<void>((resolve) => {
    if (host.child.exitCode !== null || host.child.signalCode !== null) return resolve()
    host.child.once("exit", () => resolve())
    host.child.kill("SIGINT")
  })

interface Db {
  prepare(sql: string): { all(...a: Array<unknown>): Array<Record<string, unknown>>; get(...a: Array<unknown>): Record<string, unknown> | undefined }
  close(): void
}

/** Runs `sql` on a read-only connection to the host's database. */
export const query = (file: string, sql: string, ...params: Array<unknown>): Array<Record<string, unknown>> => {
  const Sqlite = createRequire(import.meta.url)("better-sqlite3") as new (f: string, o?: object) => Db
  const db = new Sqlite(file, { readonly: true, fileMustExist: true })
  try {
    return db.prepare(sql).all(...params)
  } finally {
    db.close()
  }
}

/**
 * Resolves once every delivery in the host's database is `sent`. A reply reaches the platform a
 * moment before its delivery is marked, so a test that saw every reply waits for this, not reads it.
 */
export const awaitAllSent = (file: string) =>
  Effect.runPromise(eventually(() => (query(file, "SELECT COUNT(*) AS n FROM deliveries WHERE status <> 'sent'")[0]!.n === 0 ? true : undefined), { label: "every delivery marked sent" }))

/** A folder a real host process runs in: its pynchy.yaml, and the host and the CLI started there. */
export interface HostProject {
  readonly dir: string
  /** The host's database (`<dir>/pynchy.db`: the project's dataDir is its folder). */
  readonly db: string
  /** `PYNCHY_CONFIG` naming the project's pynchy.yaml, and the project's own env. */
  readonly env: Record<string, string>
  /** `pynchy start` in the folder, resolved once it logged that it is ready. */
  readonly start: (env?: Record<string, string>) => Promise<HostProcess>
  /** The built CLI in the folder, to completion. */
  readonly cli: (args: ReadonlyArray<string>, options?: { readonly env?: Record<string, string>; readonly input?: string }) => Promise<CliResult>
  /** `query` on the host's database. */
  readonly query: (sql: string, ...params: Array<unknown>) => Array<Record<string, unknown>>
}

/**
 * Writes `pynchy.yaml` into a new temporary folder (or `dir`): `dataDir` is that folder, then the
 * lines `yaml` gives for it. `env` goes to every host and CLI process of the project.
 */
export const hostProject = (options: { readonly yaml: (dir: string) => ReadonlyArray<string>; readonly env?: Record<string, string>; readonly dir?: string }): HostProject => {
  const dir = options.dir ?? tempDir()
  const config = path.join(dir, "pynchy.yaml")
  fs.writeFileSync(config, [`dataDir: ${JSON.stringify(dir)}`, ...options.yaml(dir)].join("\n") + "\n")
  const env = { PYNCHY_CONFIG: config, ...options.env }
  const db = path.join(dir, "pynchy.db")
  return {
    dir,
    db,
    env,
    start: (more = {}) => startHost(dir, { ...env, ...more }),
    cli: (args, o = {}) => runCli(args, { cwd: dir, env: { ...env, ...o.env }, ...(o.input !== undefined ? { input: o.input } : {}) }),
    query: (sql, ...params) => query(db, sql, ...params)
  }
}
