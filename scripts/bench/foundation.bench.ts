/**
 * The foundation figures of the issue:
 *   a. durable single-row inserts/s through the Database layer vs raw better-sqlite3, same run;
 *   b. `pynchy start` spawn-to-ready (on a new database, and again on the same one) and SIGINT-to-exit
 *      vs `node -e 0`; `pynchy --version` vs the smallest effect + @effect/cli program;
 *   c. idle RSS of the started host vs an idle bare node.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import { setTimeout as sleep } from "node:timers/promises"
import * as Database from "../../src/db/Database.js"
import { MessageStore } from "../../src/db/MessageStore.js"
import * as Stores from "../../src/db/Stores.js"
import { ConnectionName, ConversationId, WorkspaceId } from "../../src/domain/ids.js"
import { BIN, cleanEnv } from "../../test/support/cli.js"
import type { Row } from "./types.js"
import { median } from "./stats.js"

const ROOT = path.resolve(import.meta.dirname, "../..")
const INSERTS = 5_000
const WARMUP_INSERTS = 500
const INSERT_ROUNDS = 3
const START_RUNS = 5


const tempDir = () => fs.mkdtempSync(path.join(os.tmpdir(), "pynchy-bench-"))

const withTempDir = async <A>(f: (dir: string) => Promise<A>): Promise<A> => {
  const dir = tempDir()
  try {
    return await f(dir)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

const perSecond = (count: number, ms: number) => count / (ms / 1000)

// ---- a. inserts ---------------------------------------------------------------------------------

// better-sqlite3 ships no types; this is all we use.
interface RawDb {
  pragma(source: string): unknown
  exec(source: string): unknown
  prepare(source: string): { run(...params: ReadonlyArray<unknown>): unknown }
  transaction<A extends ReadonlyArray<unknown>>(f: (...args: A) => void): (...args: A) => void
  close(): void
}
const BetterSqlite3 = createRequire(import.meta.url)("better-sqlite3") as new (file: string) => RawDb

const TABLE = "CREATE TABLE bench (id INTEGER PRIMARY KEY, k TEXT NOT NULL, v TEXT NOT NULL, at INTEGER NOT NULL)"

/** The floor: one prepared INSERT per transaction, WAL, synchronous=NORMAL (the pragmas Database sets). */
const rawInserts = (file: string) => {
  const db = new BetterSqlite3(file)
  try {
    db.pragma("journal_mode = WAL")
    db.pragma("synchronous = NORMAL")
    db.exec(TABLE)
    const stmt = db.prepare("INSERT INTO bench (k, v, at) VALUES (?, ?, ?)")
    const one = db.transaction((i: number) => void stmt.run(`k${i}`, "value", Date.now()))
    for (let i = 0; i < WARMUP_INSERTS; i++) one(-i - 1)
    const t0 = performance.now()
    for (let i = 0; i < INSERTS; i++) one(i)
    return perSecond(INSERTS, performance.now() - t0)
  } finally {
    db.close()
  }
}

/** The same INSERT through SqlClient on `Database.layerFile`, one `withTransaction` each. */
const layerInserts = (file: string) =>
  Effect.runPromise(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* sql.unsafe(TABLE)
      const one = (i: number) => sql.withTransaction(sql`INSERT INTO bench (k, v, at) VALUES (${`k${i}`}, ${"value"}, ${Date.now()})`)
      for (let i = 0; i < WARMUP_INSERTS; i++) yield* one(-i - 1)
      const t0 = performance.now()
      for (let i = 0; i < INSERTS; i++) yield* one(i)
      return perSecond(INSERTS, performance.now() - t0)
    }).pipe(Effect.provide(Database.layerFile(file)))
  )

/** The pipeline's real write: `ingestBatch` with one inbound message (receipt lookup, conversation, message, receipt). */
const ingestInserts = (file: string) =>
  Effect.runPromise(
    Effect.gen(function* () {
      const store = yield* MessageStore
      const row = (i: number) => ({
        conversationId: ConversationId.make("bench:room"),
        connection: ConnectionName.make("bench"),
        place: "room",
        workspace: WorkspaceId.make("bench"),
        providerEventId: `e${i}`,
        sender: "someone",
        text: "hello",
        metadata: {}
      })
      for (let i = 0; i < WARMUP_INSERTS; i++) yield* store.ingestBatch([row(-i - 1)])
      const t0 = performance.now()
      for (let i = 0; i < INSERTS; i++) yield* store.ingestBatch([row(i)])
      return perSecond(INSERTS, performance.now() - t0)
    }).pipe(Effect.provide(Layer.provideMerge(Stores.layer, Database.layerFile(file))))
  )

const insertRows = async (): Promise<Array<Row>> => {
  const raw: Array<number> = []
  const layer: Array<number> = []
  const ingest: Array<number> = []
  // Interleaved rounds on fresh files, so drift on a shared machine hits every variant alike.
  for (let round = 0; round < INSERT_ROUNDS; round++) {
    raw.push(await withTempDir(async (d) => rawInserts(path.join(d, "raw.db"))))
    layer.push(await withTempDir((d) => layerInserts(path.join(d, "layer.db"))))
    ingest.push(await withTempDir((d) => ingestInserts(path.join(d, "ingest.db"))))
  }
  const baseline = { name: "raw better-sqlite3", value: median(raw) }
  const n = `median of ${INSERT_ROUNDS} x ${INSERTS.toLocaleString("en-US")}`
  return [
    { name: `insert, raw better-sqlite3, 1 tx each (${n})`, value: baseline.value, unit: "inserts/s" },
    { name: `insert, Database layer (SqlClient), 1 tx each (${n})`, value: median(layer), unit: "inserts/s", baseline },
    { name: `MessageStore.ingestBatch, 1 row each (${n})`, value: median(ingest), unit: "msgs/s", baseline }
  ]
}

// ---- b + c. the started host ----------------------------------------------------------------------

const ensureBundle = () => {
  if (fs.existsSync(path.join(ROOT, "dist/pynchy.cjs"))) return
  const r = spawnSync(process.execPath, ["scripts/build.mjs"], { cwd: ROOT, stdio: ["ignore", "inherit", "inherit"] })
  if (r.status !== 0) throw new Error(`node scripts/build.mjs failed (exit ${r.status})`)
}

const rssMb = (pid: number) => {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8")
  const kb = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)
  if (!kb) throw new Error(`no VmRSS in /proc/${pid}/status`)
  return Number(kb[1]) / 1024
}

type HostRun = { readonly readyMs: number; readonly rssMb: number; readonly shutdownMs: number }

/** Spawns `node bin/pynchy.js start` in `dir`; ready = the ` ready` log line on stderr. */
const startHost = (dir: string): Promise<HostRun> =>
  new Promise((resolve, reject) => {
    const t0 = performance.now()
    const child = spawn(process.execPath, ["--max-semi-space-size=2", BIN, "start"], { cwd: dir, env: cleanEnv(), stdio: ["ignore", "ignore", "pipe"] })
    let stderr = ""
    let readyMs: number | undefined
    let signalledAt: number | undefined
    let rss = 0
    const deadline = setTimeout(() => {
      child.kill("SIGKILL")
      reject(new Error(`pynchy start: no exit within 30 s (ready: ${readyMs !== undefined}); stderr:\n${stderr.slice(-2000)}`))
    }, 30_000)
    child.stderr.setEncoding("utf8")
    child.stderr.on("data", (chunk: string) => {
      stderr += chunk
      if (readyMs !== undefined || !stderr.includes(" ready")) return
      readyMs = performance.now() - t0
      void sleep(1000).then(() => {
        try {
          rss = rssMb(child.pid!)
        } catch (e) {
          child.kill("SIGKILL")
          return reject(e)
        }
        signalledAt = performance.now()
        child.kill("SIGINT")
      })
    })
    child.on("error", (e) => {
      clearTimeout(deadline)
      reject(e)
    })
    child.on("exit", (code, signal) => {
      clearTimeout(deadline)
      if (readyMs === undefined || signalledAt === undefined) {
        return reject(new Error(`pynchy start exited (code ${code}, signal ${signal}) before the measurement ended; stderr:\n${stderr.slice(-2000)}`))
      }
      resolve({ readyMs, rssMb: rss, shutdownMs: performance.now() - signalledAt })
    })
  })

/** Spawn to exit of `node <args>`. */
const spawnToExit = (args: ReadonlyArray<string>) =>
  new Promise<number>((resolve, reject) => {
    const t0 = performance.now()
    const child = spawn(process.execPath, [...args], { stdio: "ignore" })
    child.on("error", reject)
    child.on("exit", (code) => (code === 0 ? resolve(performance.now() - t0) : reject(new Error(`node ${args.join(" ")}: exit ${code}`))))
  })

/** A bare `node -e 0`: the floor for any node CLI on this machine. */
const bareNodeMs = () => spawnToExit(["-e", "0"])

/** `pynchy --version`: loading the CLI and nothing else. */
const versionMs = () => spawnToExit(["--max-semi-space-size=2", BIN, "--version"])

/** effect-cli-floor.ts bundled into `dir` the way the build bundles the CLI (minus the code cache). */
const buildFloor = async (dir: string) => {
  const { build } = await import("esbuild")
  const outfile = path.join(dir, "floor.mjs")
  await build({
    entryPoints: [path.join(import.meta.dirname, "effect-cli-floor.ts")],
    outfile,
    bundle: true,
    platform: "node",
    target: "node20",
    format: "esm",
    minifyWhitespace: true,
    logLevel: "warning",
    banner: { js: "import { createRequire as __r } from 'node:module'; const require = __r(import.meta.url);" }
  })
  return outfile
}

/** RSS of an idle bare node 1 s after spawn. */
const bareNodeRss = () =>
  new Promise<number>((resolve, reject) => {
    const child = spawn(process.execPath, ["-e", "setTimeout(()=>{},2000)"], { stdio: "ignore" })
    child.on("error", reject)
    void sleep(1000).then(() => {
      try {
        resolve(rssMb(child.pid!))
      } catch (e) {
        reject(e)
      } finally {
        child.kill("SIGKILL")
      }
    })
  })

const hostRows = (): Promise<Array<Row>> => withTempDir(async (floorDir) => {
  ensureBundle()
  const floor = await buildFloor(floorDir)
  // One unmeasured run of each warms the page cache (and the bundle's code cache), so every
  // measured run starts alike.
  await withTempDir(startHost)
  await bareNodeMs()
  await versionMs()
  await spawnToExit([floor])
  const runs: Array<HostRun> = []
  const restarts: Array<HostRun> = []
  const bare: Array<number> = []
  const bareRss: Array<number> = []
  const version: Array<number> = []
  const floorMs: Array<number> = []
  for (let i = 0; i < START_RUNS; i++) {
    // A first start (the database created and migrated), then a restart on the same folder.
    await withTempDir(async (dir) => {
      runs.push(await startHost(dir))
      restarts.push(await startHost(dir))
    })
    bare.push(await bareNodeMs())
    bareRss.push(await bareNodeRss())
    version.push(await versionMs())
    floorMs.push(await spawnToExit([floor]))
  }
  const n = `median of ${START_RUNS}`
  const bareBaseline = { name: "node -e 0 spawn to exit", value: median(bare) }
  return [
    { name: `pynchy start: spawn to ready, new database (${n})`, value: median(runs.map((r) => r.readyMs)), unit: "ms", baseline: bareBaseline, goal: "≤ 400 ms" },
    { name: `pynchy start: spawn to ready, restart on it (${n})`, value: median(restarts.map((r) => r.readyMs)), unit: "ms", baseline: bareBaseline, goal: "≤ 400 ms" },
    {
      name: `pynchy --version: spawn to exit (${n})`,
      value: median(version),
      unit: "ms",
      baseline: { name: "smallest effect + @effect/cli program (effect-cli-floor.ts)", value: median(floorMs) }
    },
    { name: `pynchy start: SIGINT to exit (${n})`, value: median(runs.map((r) => r.shutdownMs)), unit: "ms" },
    {
      name: `pynchy start: RSS 1 s after ready (${n})`,
      value: median(runs.map((r) => r.rssMb)),
      unit: "MB",
      baseline: { name: "idle bare node", value: median(bareRss) },
      goal: "≤ 100 MB"
    }
  ]
})

export default async (): Promise<Array<Row>> => [...(await insertRows()), ...(await hostRows())]
