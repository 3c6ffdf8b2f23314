/**
 * Real host processes for the example plugins: spawn `node bin/pynchy.js start` with a config,
 * wait for its ready line, kill it hard or stop it gently; read its SQLite file with better-sqlite3.
 */
import type { Duration } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import { BIN, cleanEnv, runCli } from "../support/cli.js"
import { waitFor } from "../support/eventually.js"
import { tempDir } from "../support/temp.js"

export const JSONL_EXAMPLE = path.resolve(import.meta.dirname, "../../examples/connection-runtime-jsonl")

/** A temp project for the JSONL example: config, empty inbox, and where the outbox and db go. */
export const jsonlProject = (options: { readonly limits?: string } = {}) => {
  const dir = tempDir("pynchy-jsonl-")
  const inbox = path.join(dir, "inbox.jsonl")
  const outbox = path.join(dir, "outbox.jsonl")
  const config = path.join(dir, "pynchy.yaml")
  fs.writeFileSync(inbox, "")
  fs.writeFileSync(config, [
    `dataDir: ${dir}`,
    "workspaces: [{ id: main, agentCore: scripted }]",
    "routes: [{ connection: inbox, place: '*', workspace: main }]",
    `connections: { inbox: { kind: jsonl, file: ${inbox}, outbox: ${outbox}, pollMs: 50 } }`,
    `plugins: { modules: [${JSONL_EXAMPLE}] }`,
    ...(options.limits !== undefined ? [`limits: ${options.limits}`] : [])
  ].join("\n") + "\n")
  return { dir, inbox, outbox, config, db: path.join(dir, "pynchy.db") }
}

export interface Host {
  readonly child: ChildProcess
  /** Everything the host wrote on stderr so far. */
  readonly stderr: () => string
}

/** The host's own ready line (a runtime's "runtime ready" line comes before it). */
const READY = / ready epoch=/

/** Starts the host; resolves once it logged its ready line, rejects (with its log tail) if it exits first. */
export const startHost = (config: string, env: Record<string, string> = {}) =>
  new Promise<Host>((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, "start"], {
      cwd: path.dirname(config),
      // The in-process scripted agent: these tests are about the connection runtime, not the sandbox.
      env: { ...cleanEnv(), PYNCHY_CONFIG: config, PYNCHY_EXECUTOR: "scripted", ...env },
      stdio: ["ignore", "ignore", "pipe"]
    })
    let err = ""
    const host: Host = { child, stderr: () => err }
    // A guard against a hung start, not a measurement.
    const guard = setTimeout(() => {
      child.kill("SIGKILL")
      reject(new Error(`host not ready within 60 s:\n${err.slice(-3000)}`))
    }, 60_000)
    child.stderr!.setEncoding("utf8")
    child.stderr!.on("data", (d: string) => {
      const before = READY.test(err)
      err += d
      if (!before && READY.test(err)) {
        clearTimeout(guard)
        resolve(host)
      }
    })
    child.once("exit", (code, signal) => {
      clearTimeout(guard)
      if (!READY.test(err)) reject(new Error(`host exited (${code ?? signal}) before ready:\n${err.slice(-3000)}`))
    })
    child.once("error", reject)
  })

export const killHard = (host: Host) =>
  new Promise<void>((resolve) => {
    if (host.child.exitCode !== null || host.child.signalCode !== null) return resolve()
    host.child.once("exit", () => resolve())
    host.child.kill("SIGKILL")
  })

export const stopGently = (host: Host) =>
  new Promise<number | null>((resolve) => {
    if (host.child.exitCode !== null) return resolve(host.child.exitCode)
    host.child.once("exit", (code) => resolve(code))
    host.child.kill("SIGINT")
  })

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

/** `eventually` for these async, process-level tests, with the generous bound they need. */
export const until = <A>(what: string, check: () => A | undefined | Promise<A | undefined>, timeout: Duration.DurationInput = "120 seconds"): Promise<A> =>
  waitFor(what, check, timeout)

export interface Db {
  prepare(sql: string): { all(...a: Array<unknown>): Array<Record<string, unknown>>; get(...a: Array<unknown>): Record<string, unknown> | undefined }
  close(): void
}
const Sqlite = createRequire(import.meta.url)("better-sqlite3") as new (f: string, o?: object) => Db

/** Runs `f` on a read-only connection to the host's database (undefined before the file exists). */
export const withDb = <A>(file: string, f: (db: Db) => A): A | undefined => {
  if (!fs.existsSync(file)) return undefined
  const db = new Sqlite(file, { readonly: true, fileMustExist: true })
  try {
    return f(db)
  } finally {
    db.close()
  }
}

export const count = (db: Db, sql: string, ...params: Array<unknown>) => Number(db.prepare(sql).get(...params)!.n)

/** Parsed JSONL lines of a file, and how many lines did not parse. */
export const jsonLines = <A>(file: string): { readonly lines: Array<A>; readonly bad: number } => {
  if (!fs.existsSync(file)) return { lines: [], bad: 0 }
  const lines: Array<A> = []
  let bad = 0
  for (const l of fs.readFileSync(file, "utf8").split("\n")) {
    if (l.trim() === "") continue
    try {
      lines.push(JSON.parse(l) as A)
    } catch {
      bad++
    }
  }
  return { lines, bad }
}

/** `pynchy status --json` of the project's host. */
export const statusJson = async (config: string) => {
  const r = await runCli(["status", "--json"], { cwd: path.dirname(config), env: { PYNCHY_CONFIG: config } })
  if (r.code !== 0) throw new Error(`pynchy status --json exited ${r.code}: ${r.stderr.slice(-2000)}`)
  return JSON.parse(r.stdout) as { live: { state: string; sections: { runtimes?: Array<{ name: string; plugin: string; ready: boolean; since: number }> } } | null }
}
