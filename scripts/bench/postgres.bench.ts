/**
 * The Postgres figures of issue 19, on a scratch cluster (test/support/postgres.ts: fsync off, so
 * these are CPU and round-trip figures, not disk):
 *   1. durable ingest: `Ingest.ingest` (group commit) and `MessageStore.ingestBatch` alone against a
 *      raw `pg` client doing the same statements, 256 messages per transaction, in the same run;
 *   2. committed → executor entry p50 / p99 on one host with Postgres.
 */
import { Effect, Layer, Redacted } from "effect"
import { createRequire } from "node:module"
import * as Database from "../../src/db/Database.js"
import { startScratchPostgres } from "../../test/support/postgres.js"
import { median, percentile } from "./stats.js"
import { ingestRun, latencyRun, load, type Payload, payloads, type Rate, startClock, storeRun, withTempDir } from "./pipeline.bench.js"
import type { Row } from "./types.js"

const N = Number(process.env.BENCH_PG_N ?? 20_000)
const WARMUP = 2_000
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const PER_TX = 256
const LATENCY_SAMPLES = 1_000
const LATENCY_WARMUP = 100

const progress = (line: string) => process.stderr.write(`  postgres: ${line}\n`)
const fmt = (n: number) => Math.round(n).toLocaleString("en-US")

// pg ships no types; this is all we use.
interface PgClient {
  connect(): Promise<void>
  query(text: string, values?: ReadonlyArray<unknown>): Promise<{ rows: Array<Record<string, unknown>>; rowCount: number | null }>
  end(): Promise<void>
}
const Pg = createRequire(import.meta.url)("pg") as { readonly Client: new (options: { connectionString: string }) => PgClient }

/** Creates and migrates a fresh database through the real layer; its URL. */
const migratedDatabase = async (createDatabase: () => string) => {
  const url = createDatabase()
  await Effect.runPromise(Effect.scoped(Effect.asVoid(Layer.build(Database.layerPostgres(Redacted.make(url))))))
  return url
}

/**
 * The same durable work without our layers, on the migrated schema: MessageStore's statements
 * (receipt lookup, conversation insert, message insert, receipt insert), PER_TX messages a transaction.
 */
const rawRun = async (url: string): Promise<Rate> => {
  const db = new Pg.Client({ connectionString: url })
  await db.connect()
  try {
    const known = "SELECT r.message_id AS id, m.conversation_id AS conv, r.fingerprint AS f FROM receipts r JOIN messages m ON m.id = r.message_id WHERE r.connection = $1 AND r.provider_event_id = $2"
    const conv = "INSERT INTO conversations (id, connection, place, workspace, created_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING"
    const msg = "INSERT INTO messages (conversation_id, direction, sender, text, metadata, created_at, trace_parent) VALUES ($1, 'in', $2, $3, $4, $5, $6) RETURNING id"
    const receipt = "INSERT INTO receipts (connection, provider_event_id, message_id, fingerprint) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING"
    const write = async (batch: ReadonlyArray<Payload>) => {
      const now = Date.now()
      const seen = new Set<string>()
      const conversations = new Set<string>()
      await db.query("BEGIN")
      for (const p of batch) {
        if (seen.has(p.providerEventId)) continue
        seen.add(p.providerEventId)
        if ((await db.query(known, [p.connection, p.providerEventId])).rows.length > 0) continue
        const conversationId = `${p.connection}:${p.place}`
        if (!conversations.has(conversationId)) {
          conversations.add(conversationId)
          await db.query(conv, [conversationId, p.connection, p.place, "main", now])
        }
        const id = (await db.query(msg, [conversationId, p.sender, p.text, "{}", now, null])).rows[0]!.id
        await db.query(receipt, [p.connection, p.providerEventId, id, null])
      }
      await db.query("COMMIT")
    }
    const all = async (list: ReadonlyArray<Payload>) => {
      for (let i = 0; i < list.length; i += PER_TX) await write(list.slice(i, i + PER_TX))
    }
    await all(payloads(WARMUP, "w").list)
    const timed = payloads(N, "").list
    const stop = startClock()
    await all(timed)
    return stop(N)
  } finally {
    await db.end()
  }
}

export default async (): Promise<ReadonlyArray<Row>> => {
  const pg = startScratchPostgres()
  try {
    const raw: Array<Rate> = []
    const store: Array<Rate> = []
    const ours: Array<Rate> = []
    const problems: Array<string> = []
    for (let round = 0; round < ROUNDS; round++) {
      raw.push(await rawRun(await migratedDatabase(pg.createDatabase)))
      const storeUrl = await migratedDatabase(pg.createDatabase)
      store.push(await withTempDir((d) => storeRun(d, Database.layerPostgres(Redacted.make(storeUrl)), N)))
      const ingestUrl = await migratedDatabase(pg.createDatabase)
      const run = await withTempDir((d) => ingestRun(d, "none", undefined, Database.layerPostgres(Redacted.make(ingestUrl)), N))
      ours.push(run)
      problems.push(...run.problems)
      const r = (x: Rate) => `${fmt(x.perSecond)}/s (${x.cpuUs.toFixed(1)} cpu µs/msg)`
      progress(`ingest round ${round + 1} (${load()}): Ingest ${r(run)} mean batch ${run.meanBatch.toFixed(1)}; ingestBatch alone ${r(store[round]!)}; raw pg ${PER_TX}/tx ${r(raw[round]!)}`)
    }
    if (problems.length > 0) console.error(`postgres bench: DEDUP FAILURE, ${problems.length} wrong answer(s), first: ${problems.slice(0, 5).join("; ")}`)
    const latencyUrl = await migratedDatabase(pg.createDatabase)
    const samples = await withTempDir((d) => latencyRun(d, LATENCY_SAMPLES, LATENCY_WARMUP, "event-log", latencyUrl))
    progress(`latency (${load()}): p50 ${percentile(samples, 50).toFixed(3)} ms, p90 ${percentile(samples, 90).toFixed(3)} ms, p99 ${percentile(samples, 99).toFixed(3)} ms`)
    // The same host on a SQLite file, in the same run: what choosing Postgres costs a turn's start.
    const sqlite = await withTempDir((d) => latencyRun(d, LATENCY_SAMPLES, LATENCY_WARMUP, "event-log"))
    progress(`latency on SQLite (${load()}): p50 ${percentile(sqlite, 50).toFixed(3)} ms, p99 ${percentile(sqlite, 99).toFixed(3)} ms`)
    const rate = (xs: ReadonlyArray<Rate>) => median(xs.map((x) => x.perSecond))
    const n = `median of ${ROUNDS} x ${fmt(N)}, 10% dup`
    const rawBase = { name: `raw pg ${PER_TX}/tx`, value: rate(raw) }
    const ls = `${fmt(LATENCY_SAMPLES)} sequential`
    return [
      { name: `raw pg client ingest, ${PER_TX} msgs/tx (${n})`, value: rate(raw), unit: "msgs/s" },
      { name: `Postgres MessageStore.ingestBatch alone, ${PER_TX} rows/call (${n})`, value: rate(store), unit: "msgs/s", baseline: rawBase },
      { name: `Postgres Ingest.ingest, concurrency 512, group commit (${n})`, value: rate(ours), unit: "msgs/s", baseline: rawBase },
      { name: "Postgres Ingest: wrong dedup answers (must be 0)", value: problems.length, unit: "answers" },
      { name: `Postgres committed → executor entry, p50 (${ls})`, value: percentile(samples, 50), unit: "ms", baseline: { name: "SQLite file p50", value: percentile(sqlite, 50) } },
      { name: `Postgres committed → executor entry, p99 (${ls})`, value: percentile(samples, 99), unit: "ms", baseline: { name: "SQLite file p99", value: percentile(sqlite, 99) } }
    ]
  } finally {
    pg.stop()
  }
}
