/**
 * The Postgres figures of issue 19, on a scratch cluster (test/support/postgres.ts: fsync off, so
 * these are CPU and round-trip figures, not disk):
 *   1. durable ingest: `Ingest.ingest` (group commit) and `MessageStore.ingestBatch` alone against a
 *      raw `pg` client doing the same statements, 256 messages per transaction, in the same run;
 *   2. committed → executor entry p50 / p99 on one host with Postgres;
 *   3. one host on Postgres as a one-runner cluster (what `database.url` makes it) against the same
 *      host with no cluster: committed → executor entry, stack build → first message's executor
 *      entry, and CPU while idle: what the cluster costs a host that is alone.
 */
import { Deferred, Effect, Layer, Redacted } from "effect"
import { createRequire } from "node:module"
import * as Database from "../../src/db/Database.js"
import { startScratchPostgres } from "../../test/support/postgres.js"
import { median, percentile } from "./stats.js"
import { recordingConfig } from "../../test/support/host.js"
import { freePort } from "../../test/support/synapse.js"
import type { PynchyConfig } from "../../src/config/schema.js"
import { Ingest } from "../../src/pipeline/Ingest.js"
import { hostStack, ingestRun, latencyRun, load, type Payload, payloads, type Rate, run, startClock, storeRun, withTempDir } from "./pipeline.bench.js"
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

const IDLE_MS = 5_000

/**
 * A host's stack on `url`: build start → the first message's executor entry (with a cluster, the
 * connection's singleton must land here first), then the CPU the process spends in IDLE_MS of
 * nothing to do (a runner refreshes its shard locks and assignments).
 */
const footprint = (dir: string, url: string, config: PynchyConfig) => {
  let entered: Deferred.Deferred<number> | undefined
  return run(
    Effect.gen(function* () {
      entered = yield* Deferred.make<number>()
      const t0 = performance.now()
      const ctx = yield* Layer.build(hostStack(dir, (_, at) => (entered === undefined ? Effect.void : Deferred.succeed(entered, at)), "event-log", url, config))
      const built = performance.now() - t0
      yield* Effect.flatMap(Effect.provide(Ingest, ctx), (i) => i.ingest({ connection: "test", place: "first", providerEventId: "first", sender: "u", text: "first" }))
      const first = (yield* Deferred.await(entered)) - t0
      yield* Effect.sleep("1 second")
      const c0 = process.cpuUsage()
      yield* Effect.sleep(IDLE_MS)
      const c = process.cpuUsage(c0)
      return { builtMs: built, firstMs: first, idleCpuMs: (c.user + c.system) / 1000 }
    })
  )
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
    // One host alone: the same stack with no cluster (no `database.url` in its config, the database
    // given directly) and as a one-runner cluster (the url in config, as `pynchy start` runs it).
    const alone = (d: string) => recordingConfig(d)
    const runner = async (d: string, url: string) => recordingConfig(d, { sections: { database: { url }, cluster: { host: "127.0.0.1", port: await freePort() } } })
    const noCluster = await withTempDir(async (d) => {
      const url = await migratedDatabase(pg.createDatabase)
      return { fp: await footprint(d, url, alone(d)), lat: await latencyRun(d, LATENCY_SAMPLES, LATENCY_WARMUP, "event-log", url, alone(d)) }
    })
    const oneRunner = await withTempDir(async (d) => {
      const url = await migratedDatabase(pg.createDatabase)
      const fp = await footprint(d, url, await runner(d, url))
      const url2 = await migratedDatabase(pg.createDatabase)
      return { fp, lat: await latencyRun(d, LATENCY_SAMPLES, LATENCY_WARMUP, "event-log", url2, await runner(d, url2)) }
    })
    progress(
      `one host (${load()}): no cluster build ${noCluster.fp.builtMs.toFixed(0)} ms, first entry ${noCluster.fp.firstMs.toFixed(0)} ms, idle CPU ${noCluster.fp.idleCpuMs.toFixed(0)} ms/${IDLE_MS / 1000} s, p50 ${percentile(noCluster.lat, 50).toFixed(3)} ms; ` +
        `one runner build ${oneRunner.fp.builtMs.toFixed(0)} ms, first entry ${oneRunner.fp.firstMs.toFixed(0)} ms, idle CPU ${oneRunner.fp.idleCpuMs.toFixed(0)} ms, p50 ${percentile(oneRunner.lat, 50).toFixed(3)} ms`
    )
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
      { name: `Postgres committed → executor entry, p99 (${ls})`, value: percentile(samples, 99), unit: "ms", baseline: { name: "SQLite file p99", value: percentile(sqlite, 99) } },
      { name: `one host, one-runner cluster: committed → executor entry, p50 (${ls})`, value: percentile(oneRunner.lat, 50), unit: "ms", baseline: { name: "no cluster", value: percentile(noCluster.lat, 50) } },
      { name: `one host, one-runner cluster: committed → executor entry, p99 (${ls})`, value: percentile(oneRunner.lat, 99), unit: "ms", baseline: { name: "no cluster", value: percentile(noCluster.lat, 99) } },
      { name: "one host, one-runner cluster: stack build → first message's executor entry", value: oneRunner.fp.firstMs, unit: "ms", baseline: { name: "no cluster", value: noCluster.fp.firstMs } },
      { name: `one host, one-runner cluster: CPU while idle for ${IDLE_MS / 1000} s`, value: oneRunner.fp.idleCpuMs, unit: "ms", baseline: { name: "no cluster", value: noCluster.fp.idleCpuMs } }
    ]
  } finally {
    pg.stop()
  }
}
