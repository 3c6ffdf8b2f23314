/**
 * The durable pipeline figures of issue 4:
 *   1. `Ingest.ingest` throughput with dedup (group commit) vs raw better-sqlite3 doing the same
 *      rows at one transaction per message and at 256 per transaction (the ceiling), and
 *      `Ingest.ingestMany` handed bursts of 256 (a page of a channel's backlog) by one caller,
 *      as the ceiling is;
 *   2. committed → executor entry latency (p50, p99) on an otherwise idle host, each message
 *      arriving in its own event-loop turn once the previous turn has ended;
 *   3. recovery of 1,000 interrupted turns: stack build start → executor has all of them, and
 *      `Recovery.releaseOrphanClaims` alone.
 */
import { Context, Deferred, Effect, Either, Layer, Logger, LogLevel, Queue, Scope } from "effect"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import { makeTestHost } from "../../layers/test.js"
import { HostConfig } from "../../src/config/HostConfig.js"
import type { PynchyConfig } from "../../src/config/schema.js"
import * as Database from "../../src/db/Database.js"
import { type IngestRow, MessageStore } from "../../src/db/MessageStore.js"
import * as Stores from "../../src/db/Stores.js"
import { TurnStore } from "../../src/db/TurnStore.js"
import { ConnectionName, conversationIdOf, ExecutorId, HostEpoch, WorkspaceId } from "../../src/domain/ids.js"
import type { Ingested } from "../../src/domain/message.js"
import { TurnOwner } from "../../src/domain/turn.js"
import { HostIdentity } from "../../src/pipeline/HostIdentity.js"
import { AgentExecutor, ExecutorLiveness, TurnFailed } from "../../src/pipeline/AgentExecutor.js"
import { InboundCommitted } from "../../src/pipeline/InboundCommitted.js"
import { Ingest } from "../../src/pipeline/Ingest.js"
import { EventBus } from "../../src/events/EventBus.js"
import { EventLog } from "../../src/observers/EventLog.js"
import { Observers } from "../../src/observers/Observers.js"
import { Outbox } from "../../src/pipeline/Outbox.js"
import { Recovery } from "../../src/pipeline/Recovery.js"
import { TurnQueue } from "../../src/pipeline/TurnQueue.js"
import { TurnSignal } from "../../src/pipeline/TurnSignal.js"
import { Workspaces } from "../../src/pipeline/Workspaces.js"
import { recordingConfig } from "../../test/support/host.js"
import type { Row } from "./types.js"
import { median, percentile } from "./stats.js"

const INGEST_N = 50_000
const INGEST_WARMUP = 2_000
const INGEST_CONCURRENCY = 512
const INGEST_ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const RAW_BATCH = 256
const LATENCY_SAMPLES = 2_000
const LATENCY_WARMUP = 200
const RECOVERY_TURNS = 1_000
const RECOVERY_ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)

// ---- helpers --------------------------------------------------------------------------------------

const perSecond = (count: number, ms: number) => count / (ms / 1000)
const fmt = (n: number) => Math.round(n).toLocaleString("en-US")
const progress = (line: string) => process.stderr.write(`  pipeline: ${line}\n`)

export const withTempDir = async <A>(f: (dir: string) => Promise<A>): Promise<A> => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pynchy-bench-"))
  try {
    return await f(dir)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

/** Runs a scoped program with the host's logs silenced (the turn machinery logs at info). */
export const run = <A, E>(program: Effect.Effect<A, E, Scope.Scope>): Promise<A> =>
  Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(Logger.minimumLogLevel(LogLevel.Error))))

export const dbFile = (dir: string) => path.join(dir, "pynchy.db")

/** Creates and migrates the database file through the real layer, then closes it. */
export const migratedFile = (file: string) => run(Effect.asVoid(Layer.build(Database.layerFile(file))))

// ---- payloads ---------------------------------------------------------------------------------------

export interface Payload {
  readonly connection: string
  readonly place: string
  readonly providerEventId: string
  readonly sender: string
  readonly text: string
}

/**
 * `n` payloads over 100 places; every 10th repeats an earlier event id (10% duplicates): half of
 * them 5 back (likely the same group commit: the in-batch path), half ~1,000 back (an already
 * committed receipt). `dupOf[i]` is the index of the original, or -1.
 */
export const payloads = (n: number, prefix: string) => {
  const list: Array<Payload> = []
  const dupOf: Array<number> = []
  for (let k = 0; k < n; k++) {
    const back = k % 20 === 19 && k >= 1_005 ? 1_005 : k % 10 === 9 ? 5 : 0
    const event = back === 0 ? k : k - back
    dupOf.push(back === 0 ? -1 : k - back)
    list.push({ connection: "test", place: `p${k % 100}`, providerEventId: `${prefix}e${event}`, sender: "u", text: `${prefix}m${k}` })
  }
  return { list, dupOf }
}

/** Every repeat answered `duplicate: true` with the original's message id, and every original did not. */
const dedupProblems = (dupOf: ReadonlyArray<number>, results: ReadonlyArray<Ingested>) => {
  const problems: Array<string> = []
  dupOf.forEach((orig, k) => {
    const r = results[k]!
    if (orig < 0) {
      if (r.duplicate) problems.push(`payload ${k} (fresh) answered duplicate: true`)
      return
    }
    const o = results[orig]!
    if (!r.duplicate) problems.push(`payload ${k} (repeat of ${orig}) answered duplicate: false`)
    if (r.messageId !== o.messageId) problems.push(`payload ${k} got message ${r.messageId}, its original ${o.messageId}`)
  })
  return problems
}

// ---- 1. ingest throughput ---------------------------------------------------------------------------

const noQueue = TurnQueue.of({
  signal: () => Effect.void,
  open: Effect.succeed(0),
  adopt: () => Effect.void,
  stats: Effect.succeed({ open: false, waiting: 0, running: 0, capacity: 0, dispatched: 0 })
})

/** Counts the group commits Ingest makes (delegates to the real store). */
const countingStore = (counts: { batches: number; rows: number }) =>
  Layer.effect(
    MessageStore,
    Effect.map(MessageStore, (store) =>
      MessageStore.of({
        ...store,
        ingestBatch: (rows) => {
          counts.batches++
          counts.rows += rows.length
          return store.ingestBatch(rows)
        }
      }))
  )

const noSignal = TurnSignal.of({ signal: () => Effect.void })

/** The bus of the ingest-only stack: none (no publishing cost), or the host's with the event log observing. */
export type BusChoice = "none" | "event-log"
const busOf = (choice: BusChoice) =>
  choice === "none" ? EventBus.layerNone : Layer.provideMerge(EventLog.layer, Layer.provideMerge(Observers.layer, EventBus.layer))

/** Ingest alone: config, database + stores, workspaces, a turn signal that goes nowhere. `database`: another than the file (Postgres). */
export const ingestOnly = (config: PynchyConfig, file: string, counts = { batches: 0, rows: 0 }, bus: BusChoice = "none", database: typeof Database.layerMemory = Database.layerFile(file)) =>
  Ingest.layer.pipe(
    Layer.provide(countingStore(counts)),
    Layer.provide(InboundCommitted.layer),
    Layer.provideMerge(busOf(bus)),
    Layer.provideMerge(Layer.merge(Workspaces.layer, Layer.succeed(TurnSignal, noSignal))),
    Layer.provideMerge(Layer.provideMerge(Stores.layer, database)),
    Layer.provideMerge(HostConfig.layerFrom(config))
  )

export type IngestRun = Rate & { readonly meanBatch: number; readonly problems: ReadonlyArray<string> }

export type Rate = { readonly perSecond: number; readonly cpuUs: number }

/** Starts a clock; its result gives wall throughput and CPU µs per message (CPU is steadier than wall on a shared box). */
export const startClock = () => {
  const t0 = performance.now()
  const c0 = process.cpuUsage()
  return (count: number): Rate => {
    const c = process.cpuUsage(c0)
    return { perSecond: perSecond(count, performance.now() - t0), cpuUs: (c.user + c.system) / count }
  }
}

/** `under`: a layer the Ingest stack is built on (the OTel bench passes the telemetry layer). */
export const ingestRun = (dir: string, bus: BusChoice = "none", under: Layer.Layer<never> = Layer.empty, database?: typeof Database.layerMemory, n = INGEST_N): Promise<IngestRun> => {
  const counts = { batches: 0, rows: 0 }
  const warm = payloads(INGEST_WARMUP, "w")
  const timed = payloads(n, "")
  return run(
    Effect.gen(function* () {
      const { ingest } = yield* Ingest
      yield* Effect.forEach(warm.list, ingest, { concurrency: INGEST_CONCURRENCY })
      counts.batches = 0
      counts.rows = 0
      const stop = startClock()
      const results = yield* Effect.forEach(timed.list, ingest, { concurrency: INGEST_CONCURRENCY })
      return {
        ...stop(n),
        meanBatch: counts.rows / counts.batches,
        problems: dedupProblems(timed.dupOf, results)
      }
    }).pipe(Effect.provide(Layer.provideMerge(ingestOnly(recordingConfig(dir), dbFile(dir), counts, bus, database), under)))
  )
}

/** `Ingest.ingestMany` from one caller, bursts of RAW_BATCH payloads one after another (as the raw ceiling writes). */
export const ingestManyRun = (dir: string): Promise<IngestRun> => {
  const counts = { batches: 0, rows: 0 }
  const warm = payloads(INGEST_WARMUP, "w")
  const timed = payloads(INGEST_N, "")
  const bursts = <A>(list: ReadonlyArray<A>) => Array.from({ length: Math.ceil(list.length / RAW_BATCH) }, (_, i) => list.slice(i * RAW_BATCH, (i + 1) * RAW_BATCH))
  return run(
    Effect.gen(function* () {
      const { ingestMany } = yield* Ingest
      yield* Effect.forEach(bursts(warm.list), ingestMany, { discard: true })
      counts.batches = 0
      counts.rows = 0
      const stop = startClock()
      const outcomes = (yield* Effect.forEach(bursts(timed.list), ingestMany)).flat()
      const rate = stop(INGEST_N)
      const results = outcomes.map((o) => Either.getOrThrowWith(o, (e) => new Error(`a bench payload was refused: ${e.message}`)))
      return { ...rate, meanBatch: counts.rows / counts.batches, problems: dedupProblems(timed.dupOf, results) }
    }).pipe(Effect.provide(ingestOnly(recordingConfig(dir), dbFile(dir), counts)))
  )
}

/** A message's stored trace context, as long as the one Ingest stores. */
const TRACE_PARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

// better-sqlite3 ships no types; this is all we use.
interface RawStatement {
  run(...params: ReadonlyArray<unknown>): { lastInsertRowid: number | bigint }
  get(...params: ReadonlyArray<unknown>): unknown
}
interface RawDb {
  pragma(source: string): unknown
  prepare(source: string): RawStatement
  transaction<A extends ReadonlyArray<unknown>>(f: (...args: A) => void): (...args: A) => void
  close(): void
}
const BetterSqlite3 = createRequire(import.meta.url)("better-sqlite3") as new (file: string) => RawDb

/**
 * The same durable work without our layers, on the migrated schema: receipt lookup, conversation
 * upsert, message insert, receipt insert, `perTx` messages per transaction. `traced`: each message
 * also stores a trace context, as Ingest does (a row about twice as long).
 */
export const rawRun = async (dir: string, perTx: number, traced = false): Promise<Rate> => {
  const file = dbFile(dir)
  await migratedFile(file)
  const db = new BetterSqlite3(file)
  try {
    db.pragma("journal_mode = WAL")
    db.pragma("synchronous = NORMAL")
    db.pragma("foreign_keys = ON")
    const known = db.prepare("SELECT message_id FROM receipts WHERE connection = ? AND provider_event_id = ?")
    const conv = db.prepare("INSERT OR IGNORE INTO conversations (id, connection, place, workspace, created_at) VALUES (?, ?, ?, ?, ?)")
    const msg = db.prepare("INSERT INTO messages (conversation_id, direction, sender, text, metadata, created_at, trace_parent) VALUES (?, 'in', ?, ?, '{}', ?, ?)")
    const receipt = db.prepare("INSERT INTO receipts (connection, provider_event_id, message_id) VALUES (?, ?, ?)")
    const write = db.transaction((batch: ReadonlyArray<Payload>) => {
      const now = Date.now()
      for (const p of batch) {
        if (known.get(p.connection, p.providerEventId) !== undefined) continue
        const conversationId = `${p.connection}:${p.place}`
        conv.run(conversationId, p.connection, p.place, "main", now)
        const id = msg.run(conversationId, p.sender, p.text, now, traced ? TRACE_PARENT : null).lastInsertRowid
        receipt.run(p.connection, p.providerEventId, id)
      }
    })
    const all = (list: ReadonlyArray<Payload>) => {
      for (let i = 0; i < list.length; i += perTx) write(list.slice(i, i + perTx))
    }
    all(payloads(INGEST_WARMUP, "w").list)
    const timed = payloads(INGEST_N, "").list
    const stop = startClock()
    all(timed)
    return stop(INGEST_N)
  } finally {
    db.close()
  }
}

/** `MessageStore.ingestBatch` alone, RAW_BATCH decoded rows a call, as Ingest makes them: the store's share of Ingest's cost. */
export const storeRun = (dir: string, database: typeof Database.layerMemory = Database.layerFile(dbFile(dir)), n = INGEST_N) => {
  const route = (p: Payload): IngestRow => ({
    conversationId: conversationIdOf(p.connection, p.place),
    connection: ConnectionName.make(p.connection),
    place: p.place,
    workspace: WorkspaceId.make("main"),
    providerEventId: p.providerEventId,
    sender: p.sender,
    text: p.text,
    metadata: {},
    // Ingest stores every message's trace context.
    traceParent: TRACE_PARENT
  })
  const warm = payloads(INGEST_WARMUP, "w").list.map(route)
  const timed = payloads(n, "").list.map(route)
  return run(
    Effect.gen(function* () {
      const store = yield* MessageStore
      const all = (rows: ReadonlyArray<IngestRow>) =>
        Effect.forEach(Array.from({ length: Math.ceil(rows.length / RAW_BATCH) }, (_, i) => rows.slice(i * RAW_BATCH, (i + 1) * RAW_BATCH)), store.ingestBatch, { discard: true })
      yield* all(warm)
      const stop = startClock()
      yield* all(timed)
      return stop(n)
    }).pipe(Effect.provide(Layer.provideMerge(Stores.layer, database)))
  )
}

export const load = () => `load ${os.loadavg()[0]!.toFixed(1)}`

export const ingestRows = async (): Promise<Array<Row>> => {
  const raw1: Array<Rate> = []
  const rawBatch: Array<Rate> = []
  const rawTraced: Array<Rate> = []
  const store: Array<Rate> = []
  const ours: Array<IngestRun> = []
  const burst: Array<IngestRun> = []
  // Interleaved rounds on fresh files, so drift on a shared machine hits every variant alike.
  for (let round = 0; round < INGEST_ROUNDS; round++) {
    raw1.push(await withTempDir((d) => rawRun(d, 1)))
    rawBatch.push(await withTempDir((d) => rawRun(d, RAW_BATCH)))
    rawTraced.push(await withTempDir((d) => rawRun(d, RAW_BATCH, true)))
    store.push(await withTempDir(storeRun))
    ours.push(await withTempDir(ingestRun))
    burst.push(await withTempDir(ingestManyRun))
    const r = (x: Rate) => `${fmt(x.perSecond)}/s (${x.cpuUs.toFixed(1)} cpu µs/msg)`
    progress(
      `ingest round ${round + 1} (${load()}): Ingest ${r(ours[round]!)} mean batch ${ours[round]!.meanBatch.toFixed(1)}; ingestMany ${r(burst[round]!)}; ` +
        `ingestBatch alone ${r(store[round]!)}; raw 1/tx ${r(raw1[round]!)}; raw ${RAW_BATCH}/tx ${r(rawBatch[round]!)}; raw ${RAW_BATCH}/tx with trace context ${r(rawTraced[round]!)}`
    )
  }
  const problems = [...ours, ...burst].flatMap((r) => r.problems)
  if (problems.length > 0) {
    console.error(`pipeline bench: DEDUP FAILURE, ${problems.length} wrong answer(s), first: ${problems.slice(0, 5).join("; ")}`)
  }
  const n = `median of ${INGEST_ROUNDS} x ${fmt(INGEST_N)}, 10% dup`
  const rate = (xs: ReadonlyArray<Rate>) => median(xs.map((x) => x.perSecond))
  const cpu = (xs: ReadonlyArray<Rate>) => median(xs.map((x) => x.cpuUs))
  return [
    { name: `raw better-sqlite3 ingest, 1 msg/tx (${n})`, value: rate(raw1), unit: "msgs/s" },
    { name: `raw better-sqlite3 ingest, ${RAW_BATCH} msgs/tx (${n})`, value: rate(rawBatch), unit: "msgs/s" },
    { name: `MessageStore.ingestBatch alone, ${RAW_BATCH} rows/call (${n})`, value: rate(store), unit: "msgs/s", baseline: { name: `raw ${RAW_BATCH}/tx`, value: rate(rawBatch) } },
    {
      name: `Ingest.ingest, concurrency ${INGEST_CONCURRENCY}, group commit (${n})`,
      value: rate(ours),
      unit: "msgs/s",
      baseline: { name: "raw 1 msg/tx", value: rate(raw1) },
      goal: "≥ 20,000 msgs/s"
    },
    { name: `Ingest.ingest vs the ceiling`, value: rate(ours), unit: "msgs/s", baseline: { name: `raw ${RAW_BATCH}/tx`, value: rate(rawBatch) } },
    { name: `Ingest.ingest CPU per message`, value: cpu(ours), unit: "µs", baseline: { name: `ingestBatch alone`, value: cpu(store) } },
    { name: `Ingest.ingestMany, bursts of ${RAW_BATCH} from one caller (${n})`, value: rate(burst), unit: "msgs/s", baseline: { name: `raw ${RAW_BATCH}/tx`, value: rate(rawBatch) }, goal: "≥ 0.5x the ceiling" },
    { name: `Ingest.ingestMany CPU per message`, value: cpu(burst), unit: "µs", baseline: { name: `ingestBatch alone`, value: cpu(store) } },
    // The ceiling by CPU: steadier than wall rates on a shared machine (a round's wall time includes waiting for the cores).
    { name: `Ingest.ingestMany messages per CPU-second`, value: 1e6 / cpu(burst), unit: "msgs/s", baseline: { name: `raw ${RAW_BATCH}/tx`, value: 1e6 / cpu(rawBatch) }, goal: "≥ 0.5x the ceiling" },
    { name: `raw ${RAW_BATCH}/tx CPU per message`, value: cpu(rawBatch), unit: "µs" },
    // The same ceiling writing the row Ingest writes (the trace context doubles a message row).
    { name: `raw ${RAW_BATCH}/tx with a trace context per message, CPU per message`, value: cpu(rawTraced), unit: "µs", baseline: { name: `raw ${RAW_BATCH}/tx`, value: cpu(rawBatch) } },
    { name: `Ingest.ingestMany messages per CPU-second, vs the same rows raw`, value: 1e6 / cpu(burst), unit: "msgs/s", baseline: { name: `raw ${RAW_BATCH}/tx with trace context`, value: 1e6 / cpu(rawTraced) } },
    { name: "Ingest: mean rows per group commit", value: median(ours.map((r) => r.meanBatch)), unit: "rows" },
    { name: "Ingest: wrong dedup answers (must be 0)", value: problems.length, unit: "answers" }
  ]
}

// ---- the recording executor ---------------------------------------------------------------------------

/** Records `performance.now()` at `execute` entry per message text; its executors never survive. */
const recordingExecutor = (onEntry: (text: string, at: number) => Effect.Effect<void>) => {
  let next = 0
  return Layer.merge(
    Layer.succeed(
      AgentExecutor,
      AgentExecutor.of({
        allocate: () => Effect.sync(() => ExecutorId.make(`bench:${++next}`)),
        execute: (input) =>
          Effect.suspend(() => {
            const at = performance.now()
            return Effect.forEach(input.messages, (m) => onEntry(m.text, at), { discard: true })
          }),
        adopt: () => new TurnFailed({ code: "not_adoptable", reason: "bench executors do not survive a restart", retryable: false })
      })
    ),
    Layer.succeed(ExecutorLiveness, ExecutorLiveness.of({ isAlive: () => Effect.succeed(false) }))
  )
}

/** The test host on a file database, with the recording executor (and, for `none`, a bus that does nothing). */
export const hostStack = (dir: string, onEntry: (text: string, at: number) => Effect.Effect<void>, bus: BusChoice = "event-log", databaseUrl?: string, config: PynchyConfig = recordingConfig(dir)) =>
  makeTestHost(config, {
    ...(databaseUrl !== undefined ? { databaseUrl } : { databaseFile: dbFile(dir) }),
    executor: recordingExecutor(onEntry),
    ...(bus === "none" ? { events: Layer.provideMerge(Observers.layer, EventBus.layerNone) } : {})
  })

// ---- 2. committed → executor entry --------------------------------------------------------------------

/**
 * The next message arrives in a later event-loop turn, as a channel's does (from a socket's
 * callback). Without this gap the loop ingests from a microtask chain that never lets the event
 * loop turn, so V8's scavenge task (posted when the young generation is nearly full, run at a loop
 * turn) never runs: nearly every scavenge then happens on an allocation failure in the middle of
 * a measured path, and the p99 becomes the scavenge's pause (README, "Session 11").
 */
const nextLoopTurn = Effect.async<void>((resume) => {
  const t = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(t))
})

/** `config`: another than the recording config in `dir` (the Postgres bench's one-runner cluster). */
export const latencyRun = (dir: string, count = LATENCY_SAMPLES, warmup = LATENCY_WARMUP, bus: BusChoice = "event-log", databaseUrl?: string, config?: PynchyConfig) => {
  const waiters = new Map<string, Deferred.Deferred<number>>()
  const onEntry = (text: string, at: number) => {
    const d = waiters.get(text)
    return d === undefined ? Effect.void : Deferred.succeed(d, at)
  }
  return run(
    Effect.gen(function* () {
      const { ingest } = yield* Ingest
      const queue = yield* TurnQueue
      const idle = Effect.gen(function* () {
        while (true) {
          const s = yield* queue.stats
          if (s.running === 0 && s.waiting === 0) return
          yield* Effect.yieldNow()
        }
      })
      const samples: Array<number> = []
      for (let i = 0; i < warmup + count; i++) {
        const text = `m${i}`
        const entered = yield* Deferred.make<number>()
        waiters.set(text, entered)
        yield* ingest({ connection: "test", place: `lat${i}`, providerEventId: `e${i}`, sender: "u", text })
        const committed = performance.now()
        const at = yield* Deferred.await(entered)
        if (i >= warmup) samples.push(at - committed)
        waiters.delete(text)
        yield* idle
        yield* nextLoopTurn
      }
      return samples
    }).pipe(Effect.provide(hostStack(dir, onEntry, bus, databaseUrl, config)))
  )
}

/** The floor for a fiber handoff: a queue offer to a waiting fiber that records its wake time. */
const handoffFloor = () =>
  Effect.runPromise(
    Effect.gen(function* () {
      const q = yield* Queue.unbounded<Deferred.Deferred<number>>()
      yield* Effect.forkScoped(Effect.forever(Effect.flatMap(Queue.take(q), (d) => Deferred.succeed(d, performance.now()))))
      const samples: Array<number> = []
      for (let i = 0; i < LATENCY_WARMUP + LATENCY_SAMPLES; i++) {
        const d = yield* Deferred.make<number>()
        yield* Queue.offer(q, d)
        const t0 = performance.now()
        const at = yield* Deferred.await(d)
        if (i >= LATENCY_WARMUP) samples.push(at - t0)
      }
      return samples
    }).pipe(Effect.scoped)
  )

const latencyRows = async (storePath: ReadonlyArray<number>): Promise<Array<Row>> => {
  const samples = await withTempDir(latencyRun)
  const floor = await handoffFloor()
  const early = samples.filter((s) => s < 0).length
  progress(
    `latency (${load()}): p50 ${percentile(samples, 50).toFixed(3)} ms, p90 ${percentile(samples, 90).toFixed(3)} ms, p99 ${percentile(samples, 99).toFixed(3)} ms, ` +
      `max ${percentile(samples, 100).toFixed(3)} ms; ${early} sample(s) entered before ingest resumed its caller; ` +
      `store path p50 ${percentile(storePath, 50).toFixed(3)} ms p99 ${percentile(storePath, 99).toFixed(3)} ms; ` +
      `fiber handoff p50 ${percentile(floor, 50).toFixed(4)} ms p99 ${percentile(floor, 99).toFixed(4)} ms`
  )
  const n = `${fmt(LATENCY_SAMPLES)} sequential, distinct conversations`
  const base = (p: number) => ({ name: `acquire + 2 reads alone p${p}`, value: percentile(storePath, p) })
  return [
    { name: `committed → executor entry, p50 (${n})`, value: percentile(samples, 50), unit: "ms", baseline: base(50), goal: "≤ 1 ms" },
    { name: `committed → executor entry, p99 (${n})`, value: percentile(samples, 99), unit: "ms", baseline: base(99), goal: "≤ 5 ms" }
  ]
}

// ---- 3. recovery ------------------------------------------------------------------------------------------

/** A closed database file with RECOVERY_TURNS conversations, each with a pending message and a turn running for a dead executor of epoch "old". */
export const crashedFile = (dir: string) =>
  run(
    Effect.gen(function* () {
      const { ingest } = yield* Ingest
      const turns = yield* TurnStore
      yield* Effect.forEach(
        Array.from({ length: RECOVERY_TURNS }, (_, i) => ({ connection: "test", place: `r${i}`, providerEventId: `e${i}`, sender: "u", text: `r${i}` })),
        ingest,
        { concurrency: 64 }
      )
      for (let i = 0; i < RECOVERY_TURNS; i++) {
        const acquired = yield* turns.acquire(
          conversationIdOf("test", `r${i}`),
          TurnOwner.make({ epoch: HostEpoch.make("old"), executor: ExecutorId.make(`dead:${i}`) }),
          Date.now()
        )
        if (acquired._tag !== "Started") return yield* Effect.die(new Error(`setup: acquire r${i} gave ${acquired._tag}`))
      }
    }).pipe(Effect.provide(ingestOnly(recordingConfig(dir), dbFile(dir))))
  )

export const copyDb = (from: string, to: string) => {
  for (const suffix of ["", "-wal", "-shm"]) {
    if (fs.existsSync(from + suffix)) fs.copyFileSync(from + suffix, to + suffix)
  }
}

/** `Recovery.releaseOrphanClaims` alone: the real service over the real stores; dispatch is stubbed out. */
const releaseOnly = (dir: string) =>
  run(
    Effect.gen(function* () {
      const recovery = yield* Recovery
      const t0 = performance.now()
      const report = yield* recovery.releaseOrphanClaims
      const ms = performance.now() - t0
      if (report.interrupted !== RECOVERY_TURNS) return yield* Effect.die(new Error(`releaseOrphanClaims interrupted ${report.interrupted}, expected ${RECOVERY_TURNS}`))
      return ms
    }).pipe(
      Effect.provide(
        Recovery.layer.pipe(
          Layer.provide(
            Layer.mergeAll(
              HostIdentity.layer,
              Layer.succeed(TurnQueue, noQueue),
              Layer.succeed(Outbox, Outbox.of({ record: () => Effect.void, resumePending: () => Effect.succeed(0) })),
              Layer.succeed(ExecutorLiveness, ExecutorLiveness.of({ isAlive: () => Effect.succeed(false) }))
            )
          ),
          Layer.provide(Layer.provideMerge(Stores.layer, Database.layerFile(dbFile(dir))))
        )
      )
    )
  )

/**
 * The store work recovery does, without queue, runner or fibers: `releaseOrphans`, then per turn
 * what a turn's cycle asks of the stores in sequence (acquire, conversation, messages, complete,
 * the re-acquire after completion that finds nothing). `pathMs` is acquire + the two reads per
 * turn: the store share of committed → executor entry.
 */
const storeCycleRun = (dir: string) =>
  run(
    Effect.gen(function* () {
      const turns = yield* TurnStore
      const messages = yield* MessageStore
      const epoch = HostEpoch.make("bench")
      const pathMs: Array<number> = []
      const t0 = performance.now()
      const c0 = process.cpuUsage()
      yield* turns.releaseOrphans(epoch, () => Effect.succeed(false))
      for (let i = 0; i < RECOVERY_TURNS; i++) {
        const c = conversationIdOf("test", `r${i}`)
        const p0 = performance.now()
        const acquired = yield* turns.acquire(c, TurnOwner.make({ epoch, executor: ExecutorId.make(`a${i}`) }), Date.now())
        if (acquired._tag !== "Started") return yield* Effect.die(new Error(`store cycle: acquire r${i} gave ${acquired._tag}`))
        yield* messages.conversation(c)
        yield* messages.byIds(acquired.messageIds)
        pathMs.push(performance.now() - p0)
        yield* turns.complete(acquired.turn.id, epoch)
        yield* turns.acquire(c, TurnOwner.make({ epoch, executor: ExecutorId.make(`b${i}`) }), Date.now())
      }
      const cpu = process.cpuUsage(c0)
      return { totalMs: performance.now() - t0, cpuMs: (cpu.user + cpu.system) / 1000, pathMs }
    }).pipe(Effect.provide(Layer.provideMerge(Stores.layer, Database.layerFile(dbFile(dir)))))
  )

type RecoveryRun = { readonly readyMs: number; readonly allMs: number; readonly cpuMs: number }

/** Stack build start → the executor has received every interrupted turn's message. */
export const recoveryRun = (dir: string) => {
  let received = 0
  return run(
    Effect.gen(function* () {
      const all = yield* Deferred.make<number>()
      const onEntry = () =>
        Effect.suspend(() => (++received === RECOVERY_TURNS ? Deferred.succeed(all, performance.now()) : Effect.void))
      const scope = yield* Effect.scope
      const t0 = performance.now()
      const c0 = process.cpuUsage()
      const context = yield* Layer.buildWithScope(hostStack(dir, onEntry), scope)
      const readyMs = performance.now() - t0
      const at = yield* Deferred.await(all)
      const stats = yield* Context.get(context, TurnQueue).stats
      if (stats.dispatched < RECOVERY_TURNS) return yield* Effect.die(new Error(`dispatched ${stats.dispatched}, expected ${RECOVERY_TURNS}`))
      const cpu = process.cpuUsage(c0)
      return { readyMs, allMs: at - t0, cpuMs: (cpu.user + cpu.system) / 1000 } satisfies RecoveryRun
    })
  )
}

export const recoveryRows = async (): Promise<{ rows: Array<Row>; storePath: ReadonlyArray<number> }> =>
  withTempDir(async (seed) => {
    await crashedFile(seed)
    const onCopy = <A>(f: (dir: string) => Promise<A>) =>
      withTempDir((d) => {
        copyDb(dbFile(seed), dbFile(d))
        return f(d)
      })
    const release: Array<number> = []
    const full: Array<RecoveryRun> = []
    const stores: Array<number> = []
    const storesCpu: Array<number> = []
    const storePath: Array<number> = []
    for (let round = 0; round < RECOVERY_ROUNDS; round++) {
      release.push(await onCopy(releaseOnly))
      const cycle = await onCopy(storeCycleRun)
      stores.push(cycle.totalMs)
      storesCpu.push(cycle.cpuMs)
      storePath.push(...cycle.pathMs)
      full.push(await onCopy(recoveryRun))
      progress(
        `recovery round ${round + 1} (${load()}): all dispatched ${full[round]!.allMs.toFixed(1)} ms (ready ${full[round]!.readyMs.toFixed(1)} ms, cpu ${full[round]!.cpuMs.toFixed(0)} ms), ` +
          `store work alone ${stores[round]!.toFixed(1)} ms (cpu ${storesCpu[round]!.toFixed(0)} ms), releaseOrphanClaims alone ${release[round]!.toFixed(1)} ms`
      )
    }
    const n = `${fmt(RECOVERY_TURNS)} turns, median of ${RECOVERY_ROUNDS}`
    const rows: Array<Row> = [
      {
        name: `recovery: stack build → executor has all (${n})`,
        value: median(full.map((r) => r.allMs)),
        unit: "ms",
        baseline: { name: "the same store calls, sequential", value: median(stores) },
        goal: "≤ 1,000 ms"
      },
      {
        name: `recovery: CPU time, build → executor has all (${n})`,
        value: median(full.map((r) => r.cpuMs)),
        unit: "ms",
        baseline: { name: "the same store calls, CPU", value: median(storesCpu) }
      },
      { name: `recovery: stack build → ready (${n})`, value: median(full.map((r) => r.readyMs)), unit: "ms" },
      { name: `recovery: releaseOrphanClaims alone (${n})`, value: median(release), unit: "ms" }
    ]
    return { rows, storePath }
  })

export default async (): Promise<Array<Row>> => {
  const ingest = await ingestRows()
  // Recovery first: its store-only cycle is the latency figure's baseline.
  const recovery = await recoveryRows()
  const latency = await latencyRows(recovery.storePath)
  return [...ingest, ...latency, ...recovery.rows]
}
