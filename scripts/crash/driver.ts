/**
 * Crash drill: runs the host as a real child process (scripted executor, recording channel),
 * streams messages into its database through the same client path as `pynchy send`, kills it
 * with SIGKILL at random points (from the second half of the kills on, in a required crash window
 * that no kill has landed in yet: the driver waits until the database shows it open), restarts
 * it, and finally checks that nothing was lost and nothing was duplicated. `npx tsx scripts/crash/driver.ts --kills 200 [--non-idempotent] [--sandbox] [--schedule] [--hosts 3]`.
 *
 * With `--sandbox`, every restart also meets what a hostile agent could have left in the folders
 * it can write: forged liveness records naming a bystander process, a FIFO and a link as skills,
 * and a setuid file in the workspace. The bystander must survive, the host must get ready and
 * finish every turn, and no setuid or setgid file may be left at the end.
 *
 * With `schedule`, the workspace also has an every-second schedule (its turns in `test:sched`):
 * after every kill, no scheduled run may be `queued` behind a turn that has finished (a turn's end
 * settles its runs in the same transaction); at the end every run not skipped is `delivered` by
 * the completed turn that answered its message, and no due time has two runs' messages.
 *
 * With `hosts` > 1 (`--hosts 3`), the hosts are a cluster on one Postgres (a scratch one from the
 * CLI): each has its own data dir, they share the recording "platform" file, every cycle kills
 * one of them at random (the others keep running, and the connection's shard moves to a
 * survivor after its lock expires), messages go in through a live host's client, and the same
 * checks run on the Postgres database.
 *
 * The history check then rebuilds, for a sample of turns, the history the host would send
 * (the same paged reads as the context service): every earlier user message once, in order, and
 * every delivered reply at most once, never one that was not sent.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { createRequire } from "node:module"
import * as net from "node:net"
import { ConfigProvider, Effect, Logger, LogLevel, ManagedRuntime, Layer, Redacted } from "effect"
import { HostConfig } from "../../src/config/HostConfig.js"
import type { SqlClient } from "@effect/sql"
import * as Database from "../../src/db/Database.js"
import type { Transactions } from "../../src/db/Transactions.js"
import { Ingest } from "../../src/pipeline/Ingest.js"
import { ContextStore, type TimelineEntry } from "../../src/db/ContextStore.js"
import { ConversationId } from "../../src/domain/ids.js"
import { timeline } from "../../src/pipeline/timeline.js"
import { makeClient } from "../../layers/stack.js"
import { processId } from "../../src/sandbox/runtimes/procinfo.js"
import { startScratchPostgres } from "../../test/support/postgres.js"

const BIN = path.resolve(import.meta.dirname, "../../bin/pynchy.js")

export interface DrillOptions {
  readonly kills: number
  /**
   * Crash windows each kill-and-restart must have landed in at least once. The drill goes on
   * past `kills` (up to `maxKills`) until each was hit: where a kill lands depends on the
   * machine's load, and a drill that never hit a window proved nothing about it.
   */
  readonly require?: ReadonlyArray<keyof WindowCounts>
  readonly maxKills?: number
  /** The recording channel declares idempotent resends (Matrix-like) or not. */
  readonly idempotent: boolean
  readonly seed?: number
  /** Run turns in real sandboxes (the scripted core inside bwrap) instead of the in-process agent. */
  readonly sandbox?: boolean
  /** An every-second workspace schedule runs alongside the messages (see the header). */
  readonly schedule?: boolean
  readonly log?: (line: string) => void
  /** Hosts that run at once: more than one needs `databaseUrl` (a cluster on Postgres). */
  readonly hosts?: number
  /** The Postgres database every host and check uses; none: the SQLite file of the one host. */
  readonly databaseUrl?: string
}

/** What the database looked like right after a kill: which crash windows the kill landed in. */
export interface WindowCounts {
  /** A turn was running with claims (claimed, not finished). */
  claimedNotFinished: number
  /** A delivery was written and never handed to the channel. */
  writtenNotCalled: number
  /** A delivery was handed to the channel and not marked. */
  calledNotMarked: number
  /** A scheduled run was open: queued, its message waiting for or held by a turn that had not ended. */
  scheduledRunOpen: number
  /** Several hosts: the host killed held the connection, so it had to move to a survivor. */
  holderKilled: number
}

export interface DrillReport {
  readonly kills: number
  readonly messages: number
  readonly windows: WindowCounts
  readonly problems: ReadonlyArray<string>
  readonly deliveries: Record<string, number>
  readonly channelLines: number
  /** Turns whose history was rebuilt and checked. */
  readonly historyTurns: number
}

/** The checks' read-only queries, on the SQLite file or the shared Postgres (`?` placeholders, quoted camelCase aliases). */
export interface Db {
  readonly all: (sql: string, ...params: Array<unknown>) => Promise<Array<Record<string, unknown>>>
  readonly close: () => Promise<void>
}
interface PgClient {
  connect(): Promise<void>
  query(sql: string, params: Array<unknown>): Promise<{ rows: Array<Record<string, unknown>> }>
  end(): Promise<void>
}
export const openDb = async (target: { readonly file: string } | { readonly url: string }): Promise<Db> => {
  const require = createRequire(import.meta.url)
  if ("file" in target) {
    type Sqlite = { prepare(sql: string): { all(...a: Array<unknown>): Array<Record<string, unknown>> }; close(): void }
    const db = new (require("better-sqlite3") as new (f: string, o?: object) => Sqlite)(target.file, { readonly: true })
    return { all: (sql, ...params) => Promise.resolve(db.prepare(sql).all(...params)), close: () => Promise.resolve(db.close()) }
  }
  const client = new (require("pg") as { Client: new (o: { connectionString: string }) => PgClient }).Client({ connectionString: target.url })
  await client.connect()
  return {
    all: (sql, ...params) => {
      let n = 0
      return client.query(sql.replace(/\?/g, () => `$${++n}`), params).then((r) => r.rows)
    },
    close: () => client.end()
  }
}
export const one = async (db: Db, sql: string, ...params: Array<unknown>) => (await db.all(sql, ...params))[0]!

/** A free TCP port on 127.0.0.1. */
export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo
      server.close(() => resolve(port))
    })
    server.once("error", reject)
  })

const rng = (seed: number) => () => {
  seed = (seed * 1664525 + 1013904223) % 4294967296
  return seed / 4294967296
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** The crash windows a single query can see open (a count above zero): checked after each kill, and aimed at. */
const WINDOW_SQL = {
  claimedNotFinished: "SELECT COUNT(*) AS n FROM turns t WHERE t.status = 'running' AND EXISTS (SELECT 1 FROM delivery_claims c WHERE c.turn_id = t.id)",
  writtenNotCalled: "SELECT COUNT(*) AS n FROM deliveries WHERE status = 'pending' AND attempts = 0",
  calledNotMarked: "SELECT COUNT(*) AS n FROM deliveries WHERE status = 'pending' AND attempts > 0",
  scheduledRunOpen: "SELECT COUNT(*) AS n FROM task_runs WHERE outcome = 'queued'"
} as const
type AimableWindow = keyof typeof WINDOW_SQL

/**
 * Waits (up to `ms`) until the window shows open in the database, polling every millisecond or
 * so. A random kill time misses a window a few ms wide when the machine is loaded (a host's turn
 * then starts later than the random delay reaches); an aimed kill still lands in it.
 */
const aimAt = async (db: Db, window: AimableWindow, ms: number) => {
  const deadline = performance.now() + ms
  while (performance.now() < deadline) {
    if (Number((await one(db, WINDOW_SQL[window])).n) > 0) return true
    await sleep(1)
  }
  return false
}

/** A step of the drill that does not finish in time fails it, naming the step, instead of hanging it. */
const within = <A>(what: string, ms: number, promise: Promise<A>): Promise<A> =>
  new Promise<A>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`crash drill: '${what}' did not finish within ${ms} ms`)), ms)
    promise.then((a) => { clearTimeout(timer); resolve(a) }, (e) => { clearTimeout(timer); reject(e) })
  })

const LOCK_EXPIRATION_MS = 3000
const ASSIGNMENTS_MS = 500

/** A drill host's pynchy.yaml in `dir` (its data dir, made private): the recording connection `test`, and a cluster section when it has a port. */
export const writeHostConfig = (dir: string, o: { readonly channelFile: string; readonly idempotent: boolean; readonly sandbox: boolean; readonly schedule: boolean; readonly clusterPort?: number }) => {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 })
  fs.writeFileSync(path.join(dir, "pynchy.yaml"), [
    `dataDir: ${dir}`,
    `workspaces: [{ id: main${o.sandbox ? ", agentCore: scripted" : ""}${o.schedule ? ", schedule: '* * * * * *', scheduledPrompt: tick, deliverTo: 'test:sched'" : ""} }]`,
    "routes: [{ connection: test, place: '*', workspace: main }]",
    `connections: { test: { kind: recording, file: ${o.channelFile}, idempotent: ${o.idempotent}, delayMs: 3 } }`,
    "limits: { maxConcurrentTurns: 3, maxTurnAttempts: 1000, retryBaseMs: 1 }",
    ...(o.clusterPort === undefined ? [] : [`cluster: { host: 127.0.0.1, port: ${o.clusterPort}, shardLockExpirationMs: ${LOCK_EXPIRATION_MS}, shardLockRefreshMs: 1000, refreshAssignmentsMs: ${ASSIGNMENTS_MS}, shards: 30 }`])
  ].join("\n") + "\n")
}

/** The drill's cluster timings (writeHostConfig): a dead holder's connection moves within about this bound (docs/deploy.md). */
export const DRILL_FAILOVER_BOUND_MS = LOCK_EXPIRATION_MS + ASSIGNMENTS_MS + 1000

export const startHost = (dir: string, executor: "scripted" | "sandbox", databaseUrl: string | undefined) =>
  new Promise<ChildProcess>((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, "start"], {
      cwd: dir,
      env: {
        PATH: process.env.PATH ?? "", PYNCHY_CONFIG: path.join(dir, "pynchy.yaml"), PYNCHY_EXECUTOR: executor, PYNCHY_SCRIPTED_DELAY_MS: "4", PYNCHY_LOG_LEVEL: "info",
        ...(databaseUrl !== undefined ? { PYNCHY_DATABASE_URL: databaseUrl } : {})
      },
      stdio: ["ignore", "ignore", "pipe"]
    })
    let err = ""
    const timer = setTimeout(() => {
      // A host that never gets ready is a finding, not a hang of the drill: end it and show its log.
      child.kill("SIGKILL")
      reject(new Error(`host not ready in 60 s:\n${err.slice(-4000)}`))
    }, 60_000)
    child.stderr!.setEncoding("utf8")
    child.stderr!.on("data", (d: string) => {
      err += d
      if (err.includes(" ready ")) {
        clearTimeout(timer)
        resolve(child)
      }
    })
    child.once("exit", (code) => {
      clearTimeout(timer)
      if (!err.includes(" ready ")) reject(new Error(`host exited ${code} before ready:\n${err.slice(-2000)}`))
    })
    child.once("error", reject)
  })

/** What a hostile agent leaves behind for the next host start (see the header). */
const plantTraps = (dir: string, bystander: ChildProcess) => {
  const forged = JSON.stringify({ runtime: "bwrap", id: processId(bystander.pid!) })
  const sessions = path.join(dir, "sessions")
  for (const sid of fs.existsSync(sessions) ? fs.readdirSync(sessions) : []) {
    fs.writeFileSync(path.join(sessions, sid, "sandbox.json"), forged)
  }
  const skills = path.join(dir, "workspaces", "main", "skills")
  for (const name of ["trap", "leak"]) fs.mkdirSync(path.join(skills, name), { recursive: true })
  if (!fs.existsSync(path.join(skills, "trap", "SKILL.md"))) execFileSync("mkfifo", [path.join(skills, "trap", "SKILL.md")])
  if (!fs.existsSync(path.join(skills, "leak", "SKILL.md"))) fs.symlinkSync("/etc/passwd", path.join(skills, "leak", "SKILL.md"))
  const suid = path.join(dir, "workspaces", "main", "suid-sh")
  fs.copyFileSync("/bin/sh", suid)
  fs.chmodSync(suid, 0o4755)
}

/** Files under `root` with a setuid or setgid bit (links not followed). */
const setidFiles = (root: string): Array<string> => {
  if (!fs.existsSync(root)) return []
  return fs.readdirSync(root, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && (fs.lstatSync(path.join(e.parentPath, e.name)).mode & 0o6000) !== 0)
    .map((e) => path.join(e.parentPath, e.name))
}

export const killHard = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    child.once("exit", () => resolve())
    child.kill("SIGKILL")
  })

export const stopGently = (child: ChildProcess) =>
  new Promise<number | null>((resolve) => {
    child.once("exit", (code) => resolve(code))
    child.kill("SIGINT")
  })

export const runCrashDrill = async (options: DrillOptions): Promise<DrillReport> => {
  const log = options.log ?? (() => {})
  const random = rng(options.seed ?? 42)
  const hosts = options.hosts ?? 1
  const url = options.databaseUrl
  if (hosts > 1 && url === undefined) throw new Error("crash drill: several hosts need a Postgres databaseUrl")
  if (hosts > 1 && options.sandbox === true) throw new Error("crash drill: the sandbox traps are planted for one host")
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "pynchy-crash-"))
  const dirs = hosts === 1 ? [root] : Array.from({ length: hosts }, (_, i) => path.join(root, `host-${i}`))
  const clusterPorts = hosts === 1 ? [] : await Promise.all(dirs.map(() => freePort()))
  const channelFile = path.join(root, "sent.jsonl")
  const writeConfig = (schedule: boolean) =>
    dirs.forEach((dir, i) => writeHostConfig(dir, { channelFile, idempotent: options.idempotent, sandbox: options.sandbox === true, schedule, ...(hosts > 1 ? { clusterPort: clusterPorts[i]! } : {}) }))
  writeConfig(options.schedule === true)
  const target = url !== undefined ? { url } : { file: path.join(root, "pynchy.db") }

  // The driver writes into the database the way `pynchy send` does on a host's machine (its wake
  // goes to that host): one client per host, each reading that host's config.
  const clients = dirs.map((dir) => {
    const env = new Map([["PYNCHY_CONFIG", path.join(dir, "pynchy.yaml")], ...(url !== undefined ? [["PYNCHY_DATABASE_URL", url] as [string, string]] : [])])
    return ManagedRuntime.make(
      makeClient({ config: HostConfig.layer.pipe(Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(env)))), database: Database.layer }).pipe(Layer.provide(Logger.minimumLogLevel(LogLevel.Warning)))
    )
  })
  const running: Array<ChildProcess | undefined> = dirs.map(() => undefined)
  const isUp = (c: ChildProcess | undefined): c is ChildProcess => c !== undefined && c.exitCode === null && c.signalCode === null
  const executor = options.sandbox ? "sandbox" : "scripted"
  const startAll = () => Promise.all(dirs.map(async (dir, i) => {
    if (!isUp(running[i])) running[i] = await startHost(dir, executor, url)
  }))
  let sent = 0
  const send = (n: number) => {
    // Through a live host's client (any, before the first start): the one host's, or one picked at random.
    const live = running.flatMap((c, i) => (isUp(c) ? [i] : []))
    const pick = live.length === 0 ? 0 : live[Math.floor(random() * live.length)]!
    return clients[pick]!.runPromise(
      Effect.flatMap(Ingest, (ingest) =>
        Effect.forEach(Array.from({ length: n }, () => sent++), (i) =>
          ingest.ingest({ connection: "test", place: `p${i % 7}`, providerEventId: `ev${i}`, sender: "driver", text: `m${i}` })))
    )
  }

  // The first messages create the database (and, on SQLite, its file) that the checks read.
  const db = await within("first ingest", 60_000, send(5)).then(() => openDb(target)).catch(async (e: unknown) => {
    await Promise.all(clients.map((c) => c.dispose()))
    throw e
  })
  const windows: WindowCounts = { claimedNotFinished: 0, writtenNotCalled: 0, calledNotMarked: 0, scheduledRunOpen: 0, holderKilled: 0 }
  const killProblems: Array<string> = []
  let kills = 0
  const bystander = options.sandbox ? spawn("sleep", ["3600"], { stdio: "ignore" }) : undefined
  const trapProblems: Array<string> = []
  try {
    const maxKills = Math.max(options.kills, options.maxKills ?? options.kills)
    const hitAll = () => (options.require ?? []).every((w) => windows[w] > 0)
    for (let k = 0; k < maxKills && (k < options.kills || !hitAll()); k++) {
      kills = k + 1
      await within(`start of cycle ${k + 1}`, 120_000, startAll())
      const victim = Math.floor(random() * hosts)
      const feeding = (async () => {
        for (let b = 0; b < 3; b++) {
          await send(1 + Math.floor(random() * 3))
          await sleep(random() * 15)
        }
      })()
      // From the second half on, a required window that no kill has landed in yet is aimed at.
      const aim = k >= Math.ceil(options.kills / 2) ? (options.require ?? []).find((w): w is AimableWindow => windows[w] === 0 && w in WINDOW_SQL) : undefined
      if (aim !== undefined) {
        if (!(await aimAt(db, aim, 20_000))) log(`kill ${k + 1}: the ${aim} window did not open within 20 s`)
      } else {
        // A schedule's catch-up run fires some milliseconds after ready, and a cluster's turns wait
        // for the connection's shard: their hosts live a little longer.
        await sleep(random() * (options.schedule === true || hosts > 1 ? 400 : 60))
      }
      if (hosts > 1) {
        const holder = await one(db, "SELECT runner FROM cluster_connections WHERE connection = 'test'").catch(() => undefined)
        if (holder?.runner === `127.0.0.1:${clusterPorts[victim]}`) windows.holderKilled++
      }
      await within("kill -9", 10_000, killHard(running[victim]!))
      await within(`ingest while cycle ${k + 1} ran`, 60_000, feeding)
      const active = await one(db, WINDOW_SQL.claimedNotFinished)
      const notCalled = await one(db, WINDOW_SQL.writtenNotCalled)
      const notMarked = await one(db, WINDOW_SQL.calledNotMarked)
      const scheduledOpen = await one(db, WINDOW_SQL.scheduledRunOpen)
      const behindFinished = await db.all(`SELECT r.due_at AS due, t.id AS turn, t.status FROM task_runs r JOIN messages m ON m.id = r.message_id
        JOIN turns t ON t.id = m.handled_by WHERE r.outcome = 'queued'`)
      if (Number(scheduledOpen.n) > behindFinished.length) windows.scheduledRunOpen++
      for (const b of behindFinished) killProblems.push(`after kill ${k + 1}: the run due ${b.due} is queued behind turn ${b.turn}, ${b.status}`)
      if (Number(active.n) > 0) windows.claimedNotFinished++
      if (Number(notCalled.n) > 0) windows.writtenNotCalled++
      if (Number(notMarked.n) > 0) windows.calledNotMarked++
      if (bystander !== undefined) plantTraps(root, bystander)
      log(`kill ${k + 1}/${options.kills}+${hosts > 1 ? ` (host ${victim})` : ""}: ${sent} messages so far`)
    }

    // The last run is not killed: it must finish everything that is left (no new due times: the schedule is removed).
    if (options.schedule === true) writeConfig(false)
    await within("the last start", 120_000, startAll())
    // Turns run after the last traps were planted, so the host meets them once more.
    if (bystander !== undefined) await within("ingest after the last restart", 60_000, send(3))
    const deadline = Date.now() + 120_000
    while (Date.now() < deadline) {
      const open = await one(db, `SELECT
          (SELECT COUNT(*) FROM messages WHERE direction = 'in' AND handled_by IS NULL) +
          (SELECT COUNT(*) FROM deliveries WHERE status = 'pending') AS n`)
      if (Number(open.n) === 0) break
      await sleep(50)
    }
    const codes = await Promise.all(running.map((c) => (isUp(c) ? stopGently(c) : Promise.resolve(0))))
    for (const code of codes) if (code !== 0) log(`a final host exited with ${code}`)
    if (bystander !== undefined) {
      if (bystander.exitCode !== null || bystander.signalCode !== null) trapProblems.push(`a forged liveness record got the bystander killed (${bystander.signalCode})`)
      for (const file of setidFiles(path.join(root, "workspaces"))) trapProblems.push(`${file} kept its setuid/setgid bit`)
    }
  } catch (e) {
    await db.close()
    throw e
  } finally {
    bystander?.kill("SIGKILL")
    for (const c of running) if (isUp(c)) c.kill("SIGKILL")
    await Promise.all(clients.map((c) => c.dispose()))
  }
  let clean = false
  try {
    const report = await verify(db, channelFile, options.idempotent, sent)
    const history = await verifyHistory(db, url !== undefined ? Database.layerPostgres(Redacted.make(url)) : Database.layerFile(path.join(root, "pynchy.db")))
    const scheduled = options.schedule === true ? await verifySchedule(db) : []
    const problems = [...report.problems, ...killProblems, ...scheduled, ...trapProblems, ...history.problems]
    clean = problems.length === 0
    return { ...report, problems, historyTurns: history.turns, windows, kills }
  } finally {
    await db.close()
    // A clean drill leaves nothing behind; one that found problems keeps its database and logs to read.
    if (clean) fs.rmSync(root, { recursive: true, force: true, maxRetries: 3 })
    else log(`crash drill: its files are kept in ${root}`)
  }
}

/** The invariants: every message handled by exactly one completed turn; every reply sent once. */
const verify = async (db: Db, channelFile: string, idempotent: boolean, sent: number) => {
  const problems: Array<string> = []
  const all = (await db.all(`SELECT m.id, m.text, m.sender, m.handled_by AS turn, t.status FROM messages m LEFT JOIN turns t ON t.id = m.handled_by WHERE m.direction = 'in'`))
  for (const m of all) {
    if (m.turn === null) problems.push(`message ${m.id} was never handled`)
    else if (m.status !== "completed") problems.push(`message ${m.id} handled by turn ${m.turn} in status ${m.status}`)
  }
  // The driver's own messages (a schedule's are checked by verifySchedule).
  const inbound = all.filter((m) => m.sender === "driver")
  if (inbound.length !== sent) problems.push(`${sent} messages sent, ${inbound.length} stored`)
  const leftovers = await one(db, `SELECT (SELECT COUNT(*) FROM delivery_claims) AS claims, (SELECT COUNT(*) FROM turns WHERE status IN ('queued','running','interrupted')) AS active`)
  if (Number(leftovers.claims) !== 0 || Number(leftovers.active) !== 0) problems.push(`left over: ${leftovers.claims} claims, ${leftovers.active} active turns`)
  const replies = (await db.all(`SELECT text, status, idempotency_key AS key FROM deliveries WHERE kind = 'reply'`))
  const byText = new Map<string, Array<Record<string, unknown>>>()
  for (const r of replies) byText.set(String(r.text), [...(byText.get(String(r.text)) ?? []), r])
  for (const m of inbound) {
    const rs = byText.get(`echo: ${m.text}`) ?? []
    if (rs.length !== 1) problems.push(`message ${m.text} has ${rs.length} reply deliveries`)
    else if (idempotent && rs[0]!.status !== "sent") problems.push(`reply to ${m.text} ended ${rs[0]!.status}`)
    else if (!idempotent && rs[0]!.status !== "sent" && rs[0]!.status !== "unknown") problems.push(`reply to ${m.text} ended ${rs[0]!.status}`)
  }
  const deliveries = Object.fromEntries((await db.all("SELECT status, COUNT(*) AS n FROM deliveries GROUP BY status")).map((r) => [String(r.status), Number(r.n)]))
  const sentKeys = new Set((await db.all("SELECT idempotency_key AS key FROM deliveries WHERE status = 'sent'")).map((r) => String(r.key)))
  const unknownKeys = new Set((await db.all("SELECT idempotency_key AS key FROM deliveries WHERE status = 'unknown'")).map((r) => String(r.key)))
  const lines = fs.existsSync(channelFile) ? fs.readFileSync(channelFile, "utf8").split("\n").filter((l) => l.trim() !== "").map((l) => JSON.parse(l) as { key: string }) : []
  const counts = new Map<string, number>()
  for (const l of lines) counts.set(l.key, (counts.get(l.key) ?? 0) + 1)
  for (const [key, n] of counts) if (n > 1) problems.push(`channel received ${key} ${n} times`)
  for (const key of sentKeys) if (!counts.has(key)) problems.push(`delivery ${key} marked sent but the channel never received it`)
  for (const key of counts.keys()) if (!sentKeys.has(key) && !unknownKeys.has(key)) problems.push(`channel received ${key}, which is not recorded as sent`)
  return { messages: sent, problems, deliveries, channelLines: lines.length }
}

/** Scheduled runs: none left queued, each not skipped delivered by the completed turn that answered its one message. */
const verifySchedule = async (db: Db) => {
  const problems: Array<string> = []
  const runs = (await db.all(`SELECT r.due_at AS due, r.outcome, r.turn_id AS turn, m.handled_by AS "handledBy", t.status, m.metadata
    FROM task_runs r LEFT JOIN messages m ON m.id = r.message_id LEFT JOIN turns t ON t.id = m.handled_by WHERE r.outcome <> 'skipped'`))
  const messages = await one(db, "SELECT COUNT(*) AS n FROM messages WHERE sender = 'schedule'")
  if (runs.length === 0) problems.push("no scheduled run ran")
  if (Number(messages.n) !== runs.length) problems.push(`${runs.length} scheduled runs, ${messages.n} scheduled messages`)
  for (const r of runs) {
    if (r.outcome !== "delivered") problems.push(`the run due ${r.due} ended ${r.outcome}`)
    else if (r.turn === null || String(r.turn) !== String(r.handledBy) || r.status !== "completed") problems.push(`the run due ${r.due} is settled by turn ${r.turn}, its message handled by ${r.handledBy} (${r.status})`)
    else if ((typeof r.metadata === "string" ? JSON.parse(r.metadata) as { dueAt: number } : r.metadata as { dueAt: number }).dueAt !== Number(r.due)) problems.push(`the run due ${r.due} has another due time's message`)
  }
  return problems
}

/**
 * For up to 40 completed turns spread over the run: the history the host builds for the turn
 * (no budget, no summary) holds every earlier inbound message of the conversation exactly once
 * and in order, and replies only as sent deliveries, each at most once, after the message it answers.
 */
const verifyHistory = async (db: Db, database: Layer.Layer<SqlClient.SqlClient | Transactions, unknown>) => {
  const problems: Array<string> = []
  // A schedule's conversation repeats its prompt and reply by design: the driver's conversations are checked.
  const all = (await db.all(`SELECT t.id, t.conversation_id AS conv, MIN(m.id) AS first FROM turns t JOIN messages m ON m.handled_by = t.id
    WHERE t.status = 'completed' AND t.conversation_id <> 'test:sched' GROUP BY t.id ORDER BY t.id`))
  const step = Math.max(1, Math.floor(all.length / 40))
  const sample = all.filter((_, i) => i % step === 0)
  const expected = (conv: string, first: number) => db.all(`SELECT id, text FROM messages WHERE conversation_id = ? AND direction = 'in' AND id < ? ORDER BY id`, conv, first)
  const sentReplies = new Set((await db.all(`SELECT id FROM deliveries WHERE kind = 'reply' AND status = 'sent'`)).map((r) => Number(r.id)))
  const runtime = ManagedRuntime.make(ContextStore.layer.pipe(Layer.provide(database), Layer.provide(Logger.minimumLogLevel(LogLevel.Warning))))
  try {
    for (const t of sample) {
      const conversationId = ConversationId.make(String(t.conv))
      const entries = await runtime.runPromise(Effect.gen(function* () {
        const store = yield* ContextStore
        const next = timeline(store, { conversationId, start: yield* store.start(conversationId), beforeTurn: Number(t.id), beforeMessage: Number(t.first), floor: null })
        const out: Array<TimelineEntry> = []
        while (true) {
          const e = yield* next
          if (e._tag === "None") return out.reverse()
          out.push(e.value)
        }
      }))
      const users = entries.filter((e) => e.role === "user")
      const want = await expected(String(t.conv), Number(t.first))
      if (users.map((u) => u.id).join(",") !== want.map((w) => Number(w.id)).join(",")) {
        problems.push(`turn ${t.id}: history holds user messages [${users.map((u) => u.id).join(",")}], expected [${want.map((w) => w.id).join(",")}]`)
      }
      const seen = new Set<string>()
      for (const [i, e] of entries.entries()) {
        if (e.role !== "assistant") continue
        if (!sentReplies.has(e.id)) problems.push(`turn ${t.id}: history holds reply ${e.id}, which was not sent`)
        if (seen.has(e.text)) problems.push(`turn ${t.id}: history repeats the reply "${e.text}"`)
        seen.add(e.text)
        const answered = e.text.replace(/^echo: /, "")
        if (!entries.slice(0, i).some((u) => u.role === "user" && u.text === answered)) problems.push(`turn ${t.id}: reply "${e.text}" comes before the message it answers`)
      }
    }
  } finally {
    await runtime.dispose()
    }
  return { problems, turns: sample.length }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const arg = (name: string) => process.argv.indexOf(name)
  const kills = arg("--kills") > 0 ? Number(process.argv[arg("--kills") + 1]) : 100
  const hosts = arg("--hosts") > 0 ? Number(process.argv[arg("--hosts") + 1]) : 1
  // Several hosts: PYNCHY_DATABASE_URL's database, else a scratch Postgres for the drill's length.
  const scratch = hosts > 1 && process.env.PYNCHY_DATABASE_URL === undefined ? startScratchPostgres() : undefined
  const databaseUrl = hosts > 1 ? process.env.PYNCHY_DATABASE_URL ?? scratch!.createDatabase() : undefined
  let code = 1
  try {
    const report = await runCrashDrill({
      kills, hosts, ...(databaseUrl !== undefined ? { databaseUrl } : {}),
      idempotent: arg("--non-idempotent") < 0, sandbox: arg("--sandbox") > 0, schedule: arg("--schedule") > 0, seed: Date.now() % 100000,
      log: (l) => process.stderr.write(l + "\n")
    })
    console.log(JSON.stringify(report, null, 2))
    code = report.problems.length === 0 ? 0 : 1
  } finally {
    scratch?.stop()
  }
  process.exit(code)
}
