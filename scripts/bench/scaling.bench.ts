/**
 * How cost grows with history (opt-in: minutes per size, and ~0.4 GB of temp files at 1M).
 *
 *     PYNCHY_BENCH_SCALING=1 npm run bench -- scaling                   # 10k, 100k, 1M messages
 *     PYNCHY_BENCH_SCALING=10000,100000 npm run bench -- scaling        # chosen sizes
 *
 * For each size, a database already holding that many messages (half inbound, each with its
 * receipt and its completed turn; half sent replies, each with its delivery; 100 exchanges per
 * conversation), seeded with bulk SQL on the migrated schema. On copies of it: Ingest rate (the
 * pipeline suite's run: 50,000 payloads at concurrency 512, CPU µs per message), committed →
 * executor p50/p99, recovery of 1,000 interrupted turns, `pynchy status`'s reads, and the file's
 * size per message. Every figure's baseline is its value at the smallest size, same run
 * (goal: ≤ 1.5 of it at 1M).
 */
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import { HostStore } from "../../src/db/HostStore.js"
import * as Database from "../../src/db/Database.js"
import * as Stores from "../../src/db/Stores.js"
import { copyDb, crashedFile, dbFile, ingestRun, latencyRun, load, migratedFile, recoveryRun, run, withTempDir } from "./pipeline.bench.js"
import { median, percentile } from "./stats.js"
import type { Row } from "./types.js"

const LATENCY_SAMPLES = 500
const STATUS_RUNS = 7

const progress = (line: string) => process.stderr.write(`  scaling: ${line}\n`)

interface RawDb {
  exec(sql: string): void
  pragma(sql: string): unknown
  close(): void
}
const BetterSqlite3 = createRequire(import.meta.url)("better-sqlite3") as new (file: string) => RawDb

/** `messages` rows: half inbound (receipt, completed turn), half sent replies (delivery). */
const seed = async (file: string, messages: number) => {
  await migratedFile(file)
  const db = new BetterSqlite3(file)
  try {
    db.pragma("journal_mode = WAL")
    db.pragma("synchronous = OFF")
    const half = Math.floor(messages / 2)
    const conversations = Math.max(1, Math.floor(half / 100))
    const now = 1_700_000_000_000
    const seq = (n: number) => `WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < ${n - 1})`
    db.exec("BEGIN")
    db.exec(`${seq(conversations)} INSERT INTO conversations (id, connection, place, workspace, created_at)
      SELECT 'seed:c' || i, 'seed', 'c' || i, 'main', ${now} FROM s`)
    db.exec(`${seq(half)} INSERT INTO turns (id, conversation_id, status, attempts, not_before, created_at, updated_at)
      SELECT i + 1, 'seed:c' || (i % ${conversations}), 'completed', 1, 0, ${now} + i, ${now} + i FROM s`)
    db.exec(`${seq(half)} INSERT INTO messages (id, conversation_id, direction, sender, text, metadata, created_at, handled_by)
      SELECT 2 * i + 1, 'seed:c' || (i % ${conversations}), 'in', 'user', 'a question of some forty characters ' || i, '{}', ${now} + i, i + 1 FROM s`)
    db.exec(`${seq(half)} INSERT INTO messages (id, conversation_id, direction, sender, text, metadata, created_at)
      SELECT 2 * i + 2, 'seed:c' || (i % ${conversations}), 'out', 'assistant', 'an answer of some sixty characters, a little longer than that ' || i, '{}', ${now} + i FROM s`)
    db.exec(`${seq(half)} INSERT INTO receipts (connection, provider_event_id, message_id) SELECT 'seed', 'ev' || i, 2 * i + 1 FROM s`)
    db.exec(`${seq(half)} INSERT INTO deliveries (idempotency_key, conversation_id, turn_id, kind, text, status, attempts, created_at, updated_at)
      SELECT 'seed:' || i, 'seed:c' || (i % ${conversations}), i + 1, 'reply', 'an answer of some sixty characters, a little longer than that ' || i, 'sent', 1, ${now} + i, ${now} + i FROM s`)
    db.exec("COMMIT")
    db.pragma("wal_checkpoint(TRUNCATE)")
  } finally {
    db.close()
  }
  return fs.statSync(file).size
}

/** What `pynchy status` reads from the database (table counts, the last run), on the real stores. */
const statusRun = (dir: string) =>
  run(
    Effect.gen(function* () {
      const host = yield* HostStore
      const times: Array<number> = []
      for (let i = 0; i < STATUS_RUNS; i++) {
        const t0 = performance.now()
        yield* host.tableCounts
        yield* host.lastRun
        times.push(performance.now() - t0)
      }
      return median(times)
    }).pipe(Effect.provide(Layer.provideMerge(Stores.layer, Database.layerFile(dbFile(dir)))))
  )

interface Figures {
  readonly size: number
  readonly bytesPerMessage: number
  readonly ingestCpuUs: number
  readonly ingestRate: number
  readonly p50: number
  readonly p99: number
  readonly recoveryMs: number
  readonly recoveryCpuMs: number
  readonly statusMs: number
}

const measure = (size: number): Promise<Figures> =>
  withTempDir(async (seedDir) => {
    const t0 = performance.now()
    const bytes = await seed(dbFile(seedDir), size)
    progress(`${size.toLocaleString("en-US")} messages seeded in ${((performance.now() - t0) / 1000).toFixed(1)} s, ${(bytes / 2 ** 20).toFixed(1)} MB`)
    const onCopy = <A>(f: (dir: string) => Promise<A>) =>
      withTempDir((d) => {
        copyDb(dbFile(seedDir), dbFile(d))
        return f(d)
      })
    const statusMs = await onCopy(statusRun)
    const ingest = await onCopy(ingestRun)
    const latency = await onCopy((d) => latencyRun(d, LATENCY_SAMPLES, 50))
    const recovery = await onCopy(async (d) => {
      await crashedFile(d)
      return recoveryRun(d)
    })
    const f: Figures = {
      size,
      bytesPerMessage: bytes / size,
      ingestCpuUs: ingest.cpuUs,
      ingestRate: ingest.perSecond,
      p50: percentile(latency, 50),
      p99: percentile(latency, 99),
      recoveryMs: recovery.allMs,
      recoveryCpuMs: recovery.cpuMs,
      statusMs
    }
    progress(
      `${size.toLocaleString("en-US")} (${load()}): ingest ${Math.round(f.ingestRate)}/s ${f.ingestCpuUs.toFixed(1)} cpu µs/msg; ` +
        `committed → executor p50 ${f.p50.toFixed(3)} ms p99 ${f.p99.toFixed(3)} ms; recovery ${f.recoveryMs.toFixed(0)} ms (cpu ${f.recoveryCpuMs.toFixed(0)} ms); ` +
        `status ${f.statusMs.toFixed(2)} ms; ${f.bytesPerMessage.toFixed(0)} bytes/message`
    )
    return f
  })

const sizesFromEnv = (value: string): ReadonlyArray<number> => {
  if (value === "1") return [10_000, 100_000, 1_000_000]
  const sizes = value.split(",").map((s) => Number(s.trim()))
  const bad = sizes.find((n) => !Number.isInteger(n) || n < 1_000)
  if (bad !== undefined) throw new Error(`PYNCHY_BENCH_SCALING: '${value}' is not "1" or a list of sizes ≥ 1,000 (e.g. 10000,100000)`)
  return sizes
}

export default async (): Promise<Array<Row>> => {
  const setting = process.env.PYNCHY_BENCH_SCALING
  if (setting === undefined || setting === "" || setting === "0") {
    progress("skipped (opt-in: PYNCHY_BENCH_SCALING=1 npm run bench -- scaling)")
    return []
  }
  const figures: Array<Figures> = []
  for (const size of sizesFromEnv(setting)) figures.push(await measure(size))
  const first = figures[0]!
  const at = (f: Figures) => `at ${f.size.toLocaleString("en-US")} messages`
  const base = (name: string, value: number) => ({ name: `${name} at ${first.size.toLocaleString("en-US")}`, value })
  const goal = "≤ 1.5 × its value at the smallest size"
  return figures.flatMap((f) => [
    { name: `Ingest CPU per message ${at(f)}`, value: f.ingestCpuUs, unit: "µs", baseline: base("the same", first.ingestCpuUs), goal },
    { name: `Ingest rate ${at(f)}`, value: f.ingestRate, unit: "msgs/s", baseline: base("the same", first.ingestRate) },
    { name: `committed → executor p50 ${at(f)}`, value: f.p50, unit: "ms", baseline: base("the same", first.p50), goal },
    { name: `committed → executor p99 ${at(f)}`, value: f.p99, unit: "ms", baseline: base("the same", first.p99), goal },
    { name: `recovery of 1,000 turns ${at(f)}`, value: f.recoveryMs, unit: "ms", baseline: base("the same", first.recoveryMs), goal },
    { name: `recovery CPU time ${at(f)}`, value: f.recoveryCpuMs, unit: "ms", baseline: base("the same", first.recoveryCpuMs), goal },
    { name: `pynchy status reads ${at(f)}`, value: f.statusMs, unit: "ms", baseline: base("the same", first.statusMs), goal },
    { name: `database size per message ${at(f)}`, value: f.bytesPerMessage, unit: "bytes", baseline: base("the same", first.bytesPerMessage), goal }
  ])
}
