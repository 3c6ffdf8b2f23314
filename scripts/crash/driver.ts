/**
 * Crash drill: runs the host as a real child process (scripted executor, recording channel),
 * streams messages into its database through the same client path as `pynchy send`, kills it
 * with SIGKILL at random points, restarts it, and finally checks that nothing was lost and
 * nothing was duplicated. `npx tsx scripts/crash/driver.ts --kills 200 [--non-idempotent] [--sandbox] [--schedule]`.
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
 * The history check then rebuilds, for a sample of turns, the history the host would send
 * (the same paged reads as the context service): every earlier user message once, in order, and
 * every delivered reply at most once, never one that was not sent.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { createRequire } from "node:module"
import { Effect, Logger, LogLevel, ManagedRuntime, Layer } from "effect"
import { HostConfig } from "../../src/config/HostConfig.js"
import * as Database from "../../src/db/Database.js"
import { Ingest } from "../../src/pipeline/Ingest.js"
import { ContextStore, type TimelineEntry } from "../../src/db/ContextStore.js"
import { ConversationId } from "../../src/domain/ids.js"
import { timeline } from "../../src/pipeline/timeline.js"
import { makeClient } from "../../layers/stack.js"
import { processId } from "../../src/sandbox/runtimes/procinfo.js"

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

interface Db {
  prepare(sql: string): { all(...a: Array<unknown>): Array<Record<string, unknown>>; get(...a: Array<unknown>): Record<string, unknown> | undefined }
  close(): void
}
const openDb = (file: string): Db => {
  const Sqlite = createRequire(import.meta.url)("better-sqlite3") as new (f: string, o?: object) => Db
  return new Sqlite(file, { readonly: true })
}

const rng = (seed: number) => () => {
  seed = (seed * 1664525 + 1013904223) % 4294967296
  return seed / 4294967296
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** A step of the drill that does not finish in time fails it, naming the step, instead of hanging it. */
const within = <A>(what: string, ms: number, promise: Promise<A>): Promise<A> =>
  new Promise<A>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`crash drill: '${what}' did not finish within ${ms} ms`)), ms)
    promise.then((a) => { clearTimeout(timer); resolve(a) }, (e) => { clearTimeout(timer); reject(e) })
  })

const startHost = (dir: string, log: (l: string) => void, executor: "scripted" | "sandbox") =>
  new Promise<ChildProcess>((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, "start"], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? "", PYNCHY_CONFIG: path.join(dir, "pynchy.yaml"), PYNCHY_EXECUTOR: executor, PYNCHY_SCRIPTED_DELAY_MS: "4", PYNCHY_LOG_LEVEL: "info" },
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
    void log
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

const killHard = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    child.once("exit", () => resolve())
    child.kill("SIGKILL")
  })

const stopGently = (child: ChildProcess) =>
  new Promise<number | null>((resolve) => {
    child.once("exit", (code) => resolve(code))
    child.kill("SIGINT")
  })

export const runCrashDrill = async (options: DrillOptions): Promise<DrillReport> => {
  const log = options.log ?? (() => {})
  const random = rng(options.seed ?? 42)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pynchy-crash-"))
  const writeConfig = (schedule: boolean) =>
    fs.writeFileSync(path.join(dir, "pynchy.yaml"), [
      `dataDir: ${dir}`,
      `workspaces: [{ id: main${options.sandbox ? ", agentCore: scripted" : ""}${schedule ? ", schedule: '* * * * * *', scheduledPrompt: tick, deliverTo: 'test:sched'" : ""} }]`,
      "routes: [{ connection: test, place: '*', workspace: main }]",
      `connections: { test: { kind: recording, file: sent.jsonl, idempotent: ${options.idempotent}, delayMs: 3 } }`,
      "limits: { maxConcurrentTurns: 3, maxTurnAttempts: 1000, retryBaseMs: 1 }"
    ].join("\n") + "\n")
  writeConfig(options.schedule === true)
  const dbFile = path.join(dir, "pynchy.db")

  // The driver writes into the host's database the way `pynchy send` does.
  process.env.PYNCHY_CONFIG = path.join(dir, "pynchy.yaml")
  const client = ManagedRuntime.make(
    makeClient({ config: HostConfig.layer, database: Database.layer }).pipe(Layer.provide(Logger.minimumLogLevel(LogLevel.Warning)))
  )
  let sent = 0
  const send = (n: number) =>
    client.runPromise(
      Effect.flatMap(Ingest, (ingest) =>
        Effect.forEach(Array.from({ length: n }, () => sent++), (i) =>
          ingest.ingest({ connection: "test", place: `p${i % 7}`, providerEventId: `ev${i}`, sender: "driver", text: `m${i}` })))
    )

  const windows: WindowCounts = { claimedNotFinished: 0, writtenNotCalled: 0, calledNotMarked: 0, scheduledRunOpen: 0 }
  const killProblems: Array<string> = []
  let kills = 0
  const bystander = options.sandbox ? spawn("sleep", ["3600"], { stdio: "ignore" }) : undefined
  const trapProblems: Array<string> = []
  try {
    await within("first ingest", 60_000, send(5))
    const maxKills = Math.max(options.kills, options.maxKills ?? options.kills)
    const hitAll = () => (options.require ?? []).every((w) => windows[w] > 0)
    for (let k = 0; k < maxKills && (k < options.kills || !hitAll()); k++) {
      kills = k + 1
      const host = await startHost(dir, log, options.sandbox ? "sandbox" : "scripted")
      const feeding = (async () => {
        for (let b = 0; b < 3; b++) {
          await send(1 + Math.floor(random() * 3))
          await sleep(random() * 15)
        }
      })()
      // A schedule's catch-up run fires some milliseconds after ready: its hosts live a little longer.
      await sleep(random() * (options.schedule === true ? 400 : 60))
      await within("kill -9", 10_000, killHard(host))
      await within(`ingest while cycle ${k + 1} ran`, 60_000, feeding)
      const db = openDb(dbFile)
      const active = db.prepare("SELECT COUNT(*) AS n FROM turns t WHERE t.status = 'running' AND EXISTS (SELECT 1 FROM delivery_claims c WHERE c.turn_id = t.id)").get()!
      const notCalled = db.prepare("SELECT COUNT(*) AS n FROM deliveries WHERE status = 'pending' AND attempts = 0").get()!
      const notMarked = db.prepare("SELECT COUNT(*) AS n FROM deliveries WHERE status = 'pending' AND attempts > 0").get()!
      const scheduledOpen = db.prepare("SELECT COUNT(*) AS n FROM task_runs WHERE outcome = 'queued'").get()!
      const behindFinished = db.prepare(`SELECT r.due_at AS due, t.id AS turn, t.status FROM task_runs r JOIN messages m ON m.id = r.message_id
        JOIN turns t ON t.id = m.handled_by WHERE r.outcome = 'queued'`).all()
      db.close()
      if (Number(scheduledOpen.n) > behindFinished.length) windows.scheduledRunOpen++
      for (const b of behindFinished) killProblems.push(`after kill ${k + 1}: the run due ${b.due} is queued behind turn ${b.turn}, ${b.status}`)
      if (Number(active.n) > 0) windows.claimedNotFinished++
      if (Number(notCalled.n) > 0) windows.writtenNotCalled++
      if (Number(notMarked.n) > 0) windows.calledNotMarked++
      if (bystander !== undefined) plantTraps(dir, bystander)
      log(`kill ${k + 1}/${options.kills}+: ${sent} messages so far`)
    }

    // The last run is not killed: it must finish everything that is left (no new due times: the schedule is removed).
    if (options.schedule === true) writeConfig(false)
    const host = await startHost(dir, log, options.sandbox ? "sandbox" : "scripted")
    // Turns run after the last traps were planted, so the host meets them once more.
    if (bystander !== undefined) await within("ingest after the last restart", 60_000, send(3))
    const deadline = Date.now() + 120_000
    while (Date.now() < deadline) {
      const db = openDb(dbFile)
      const open = db.prepare(`SELECT
          (SELECT COUNT(*) FROM messages WHERE direction = 'in' AND handled_by IS NULL) +
          (SELECT COUNT(*) FROM deliveries WHERE status = 'pending') AS n`).get()!
      db.close()
      if (Number(open.n) === 0) break
      await sleep(50)
    }
    const code = await stopGently(host)
    if (code !== 0) log(`final host exited with ${code}`)
    if (bystander !== undefined) {
      if (bystander.exitCode !== null || bystander.signalCode !== null) trapProblems.push(`a forged liveness record got the bystander killed (${bystander.signalCode})`)
      for (const file of setidFiles(path.join(dir, "workspaces"))) trapProblems.push(`${file} kept its setuid/setgid bit`)
    }
  } finally {
    bystander?.kill("SIGKILL")
    await client.dispose()
  }
  const report = verify(dbFile, path.join(dir, "sent.jsonl"), options.idempotent, sent)
  const history = await verifyHistory(dbFile)
  const scheduled = options.schedule === true ? verifySchedule(dbFile) : []
  return { ...report, problems: [...report.problems, ...killProblems, ...scheduled, ...trapProblems, ...history.problems], historyTurns: history.turns, windows, kills }
}

/** The invariants: every message handled by exactly one completed turn; every reply sent once. */
const verify = (dbFile: string, channelFile: string, idempotent: boolean, sent: number) => {
  const problems: Array<string> = []
  const db = openDb(dbFile)
  const all = db.prepare(`SELECT m.id, m.text, m.sender, m.handled_by AS turn, t.status FROM messages m LEFT JOIN turns t ON t.id = m.handled_by WHERE m.direction = 'in'`).all()
  for (const m of all) {
    if (m.turn === null) problems.push(`message ${m.id} was never handled`)
    else if (m.status !== "completed") problems.push(`message ${m.id} handled by turn ${m.turn} in status ${m.status}`)
  }
  // The driver's own messages (a schedule's are checked by verifySchedule).
  const inbound = all.filter((m) => m.sender === "driver")
  if (inbound.length !== sent) problems.push(`${sent} messages sent, ${inbound.length} stored`)
  const leftovers = db.prepare(`SELECT (SELECT COUNT(*) FROM delivery_claims) AS claims, (SELECT COUNT(*) FROM turns WHERE status IN ('queued','running','interrupted')) AS active`).get()!
  if (Number(leftovers.claims) !== 0 || Number(leftovers.active) !== 0) problems.push(`left over: ${leftovers.claims} claims, ${leftovers.active} active turns`)
  const replies = db.prepare(`SELECT text, status, idempotency_key AS key FROM deliveries WHERE kind = 'reply'`).all()
  const byText = new Map<string, Array<Record<string, unknown>>>()
  for (const r of replies) byText.set(String(r.text), [...(byText.get(String(r.text)) ?? []), r])
  for (const m of inbound) {
    const rs = byText.get(`echo: ${m.text}`) ?? []
    if (rs.length !== 1) problems.push(`message ${m.text} has ${rs.length} reply deliveries`)
    else if (idempotent && rs[0]!.status !== "sent") problems.push(`reply to ${m.text} ended ${rs[0]!.status}`)
    else if (!idempotent && rs[0]!.status !== "sent" && rs[0]!.status !== "unknown") problems.push(`reply to ${m.text} ended ${rs[0]!.status}`)
  }
  const deliveries = Object.fromEntries(db.prepare("SELECT status, COUNT(*) AS n FROM deliveries GROUP BY status").all().map((r) => [String(r.status), Number(r.n)]))
  const sentKeys = new Set(db.prepare("SELECT idempotency_key AS key FROM deliveries WHERE status = 'sent'").all().map((r) => String(r.key)))
  const unknownKeys = new Set(db.prepare("SELECT idempotency_key AS key FROM deliveries WHERE status = 'unknown'").all().map((r) => String(r.key)))
  db.close()
  const lines = fs.existsSync(channelFile) ? fs.readFileSync(channelFile, "utf8").split("\n").filter((l) => l.trim() !== "").map((l) => JSON.parse(l) as { key: string }) : []
  const counts = new Map<string, number>()
  for (const l of lines) counts.set(l.key, (counts.get(l.key) ?? 0) + 1)
  for (const [key, n] of counts) if (n > 1) problems.push(`channel received ${key} ${n} times`)
  for (const key of sentKeys) if (!counts.has(key)) problems.push(`delivery ${key} marked sent but the channel never received it`)
  for (const key of counts.keys()) if (!sentKeys.has(key) && !unknownKeys.has(key)) problems.push(`channel received ${key}, which is not recorded as sent`)
  return { messages: sent, problems, deliveries, channelLines: lines.length }
}

/** Scheduled runs: none left queued, each not skipped delivered by the completed turn that answered its one message. */
const verifySchedule = (dbFile: string) => {
  const problems: Array<string> = []
  const db = openDb(dbFile)
  const runs = db.prepare(`SELECT r.due_at AS due, r.outcome, r.turn_id AS turn, m.handled_by AS handledBy, t.status, m.metadata
    FROM task_runs r LEFT JOIN messages m ON m.id = r.message_id LEFT JOIN turns t ON t.id = m.handled_by WHERE r.outcome <> 'skipped'`).all()
  const messages = db.prepare("SELECT COUNT(*) AS n FROM messages WHERE sender = 'schedule'").get()!
  db.close()
  if (runs.length === 0) problems.push("no scheduled run ran")
  if (Number(messages.n) !== runs.length) problems.push(`${runs.length} scheduled runs, ${messages.n} scheduled messages`)
  for (const r of runs) {
    if (r.outcome !== "delivered") problems.push(`the run due ${r.due} ended ${r.outcome}`)
    else if (r.turn === null || r.turn !== r.handledBy || r.status !== "completed") problems.push(`the run due ${r.due} is settled by turn ${r.turn}, its message handled by ${r.handledBy} (${r.status})`)
    else if ((JSON.parse(String(r.metadata)) as { dueAt: number }).dueAt !== r.due) problems.push(`the run due ${r.due} has another due time's message`)
  }
  return problems
}

/**
 * For up to 40 completed turns spread over the run: the history the host builds for the turn
 * (no budget, no summary) holds every earlier inbound message of the conversation exactly once
 * and in order, and replies only as sent deliveries, each at most once, after the message it answers.
 */
const verifyHistory = async (dbFile: string) => {
  const problems: Array<string> = []
  const db = openDb(dbFile)
  // A schedule's conversation repeats its prompt and reply by design: the driver's conversations are checked.
  const all = db.prepare(`SELECT t.id, t.conversation_id AS conv, MIN(m.id) AS first FROM turns t JOIN messages m ON m.handled_by = t.id
    WHERE t.status = 'completed' AND t.conversation_id <> 'test:sched' GROUP BY t.id ORDER BY t.id`).all()
  const step = Math.max(1, Math.floor(all.length / 40))
  const sample = all.filter((_, i) => i % step === 0)
  const expected = (conv: string, first: number) => db.prepare(`SELECT id, text FROM messages WHERE conversation_id = ? AND direction = 'in' AND id < ? ORDER BY id`).all(conv, first)
  const sentReplies = new Set(db.prepare(`SELECT id FROM deliveries WHERE kind = 'reply' AND status = 'sent'`).all().map((r) => Number(r.id)))
  const runtime = ManagedRuntime.make(ContextStore.layer.pipe(Layer.provide(Database.layerFile(dbFile)), Layer.provide(Logger.minimumLogLevel(LogLevel.Warning))))
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
      const want = expected(String(t.conv), Number(t.first))
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
    db.close()
  }
  return { problems, turns: sample.length }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const arg = (name: string) => process.argv.indexOf(name)
  const kills = arg("--kills") > 0 ? Number(process.argv[arg("--kills") + 1]) : 100
  const report = await runCrashDrill({ kills, idempotent: arg("--non-idempotent") < 0, sandbox: arg("--sandbox") > 0, schedule: arg("--schedule") > 0, seed: Date.now() % 100000, log: (l) => process.stderr.write(l + "\n") })
  console.log(JSON.stringify(report, null, 2))
  process.exit(report.problems.length === 0 ? 0 : 1)
}
