/**
 * Where one channel message's time goes, from the host's own spans (docs/observability.md): a
 * tracer given to the host that notes when each Effect span starts and ends (performance.now(),
 * the clock of the benches' round trips) and how much CPU the process had used by then, and a
 * breakdown of each round trip into stages between the spans the pipeline already makes
 * (`Ingest.ingest`, `TurnRunner.run`, `Outbox.record`, `Outbox.send`, @effect/sql's `sql.execute`
 * for the part claim), the moment the fake received the platform call and the moment the bench
 * saw the reply.
 *
 * Each stage is reported as wall time (p50 over the round trips) and as the CPU this process used
 * in it (p50). The host, the fake and the bench share one thread, so CPU in a stage is whatever ran
 * then (a previous turn's tail too); wall minus CPU is waiting: for a timer, for the socket, or for
 * the machine (on a loaded box the process gets a fraction of a core, and the ratio shows it).
 */
import { Effect, Either, Exit, Layer, Scope, Tracer } from "effect"
import * as os from "node:os"
import * as path from "node:path"
import { makeTestHost } from "../../layers/test.js"
import { decodeConfig } from "../../src/config/HostConfig.js"
import { native, type NativeRuntimeContext } from "../../src/contracts/native-runtime.js"
import { nativeChannel } from "../../src/contracts/channel.js"
import { tempDir } from "../../test/support/db.js"
import { median } from "./stats.js"
import type { Row } from "./types.js"

export interface SpanMark {
  readonly name: string
  readonly start: number
  readonly end: number
  readonly query: string | undefined
}

const cpuNow = () => {
  const u = process.cpuUsage()
  return (u.user + u.system) / 1000
}

/** Statements are many and short: they get wall marks only (a CPU reading costs ~2-9 µs). */
const WALL_ONLY = new Set(["sql.execute", "sql.transaction"])

/**
 * A tracer that keeps every ended span (name, start, end, its SQL), a clock of (wall, CPU)
 * readings taken as the pipeline's own spans start and end and at every `tick`, and the layer
 * that makes it the host's tracer.
 */
export const spanRecorder = () => {
  const native = Effect.runSync(Effect.tracer)
  const spans: Array<SpanMark> = []
  const clock: Array<readonly [wall: number, cpu: number]> = []
  const tick = () => void clock.push([performance.now(), cpuNow()])
  const tracer = Tracer.make({
    span: (name, parent, context, links, startTime, kind, options) => {
      const span = native.span(name, parent, context, links, startTime, kind, options)
      const timed = !WALL_ONLY.has(name)
      if (timed) tick()
      const start = performance.now()
      const end = span.end.bind(span)
      span.end = (endTime, exit) => {
        const query = span.attributes.get("db.query.text")
        spans.push({ name, start, end: performance.now(), query: typeof query === "string" ? query : undefined })
        if (timed) tick()
        end(endTime, exit)
      }
      return span
    },
    context: (f, fiber) => native.context(f, fiber)
  })
  return { spans, clock, tick, layer: Layer.setTracer(tracer) }
}

/** The process's CPU (ms) at a wall time, interpolated between the clock's readings around it. */
const cpuAt = (clock: ReadonlyArray<readonly [number, number]>, wall: number): number => {
  let lo = 0
  let hi = clock.length - 1
  if (hi < 0) return 0
  if (wall <= clock[0]![0]) return clock[0]![1]
  if (wall >= clock[hi]![0]) return clock[hi]![1]
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1
    if (clock[mid]![0] <= wall) lo = mid
    else hi = mid
  }
  const [w0, c0] = clock[lo]!
  const [w1, c1] = clock[hi]!
  return w1 === w0 ? c0 : c0 + ((c1 - c0) * (wall - w0)) / (w1 - w0)
}

/** One round trip as the bench saw it: sent by the fake, the platform call received by the fake, the reply seen. */
export interface RoundMarks {
  readonly sent: number
  readonly received: number
  readonly seen: number
}

/** The stages, in order, each from the previous mark to its own. */
export const STAGES = [
  ["fake sends → runtime calls Ingest (socket, platform client, runtime)", "ingest"],
  ["Ingest: decode, route, group commit, caller resumed", "committed"],
  ["committed → turn claimed (signal, queue, acquire)", "claimed"],
  ["turn claimed → reply recorded (prepare, agent, Outbox.record)", "recorded"],
  ["recorded → delivery taken (drain: conversation, pending rows)", "taken"],
  ["delivery taken → part claimed (attempt, part claim)", "partClaimed"],
  ["part claimed → fake receives the call (platform client, HTTP)", "received"],
  ["fake receives the call → bench sees the reply", "seen"]
] as const

type Mark = (typeof STAGES)[number][1] | "sent"

const first = (spans: ReadonlyArray<SpanMark>, name: string, from: number) => spans.find((s) => s.name === name && s.start >= from)

/** The stage marks of one round, or undefined when a span is missing (a round that went another way). */
const marksOf = (spans: ReadonlyArray<SpanMark>, round: RoundMarks): Record<Mark | "sendEnded", number> | undefined => {
  const inRound = spans.filter((s) => s.start >= round.sent && s.start <= round.seen)
  const ingest = first(inRound, "Ingest.ingest", round.sent)
  if (ingest === undefined) return undefined
  const run = first(inRound, "TurnRunner.run", ingest.end)
  if (run === undefined) return undefined
  const record = first(inRound, "Outbox.record", run.start)
  if (record === undefined) return undefined
  const send = first(inRound, "Outbox.send", record.end)
  if (send === undefined) return undefined
  // The part claim (parts.ts) is the last statement on delivery_parts to end before the call reached the fake.
  const claim = inRound.filter((s) => s.name === "sql.execute" && s.start >= send.start && s.end <= round.received && s.query?.includes("delivery_parts") === true).at(-1)
  return {
    sendEnded: send.end,
    sent: round.sent,
    ingest: ingest.start,
    committed: ingest.end,
    claimed: run.start,
    recorded: record.end,
    taken: send.start,
    partClaimed: claim?.end ?? send.start,
    received: round.received,
    seen: round.seen
  }
}

/** SQL per round: statements and the time they took. */
const sqlOf = (spans: ReadonlyArray<SpanMark>, round: RoundMarks) => {
  const statements = spans.filter((s) => s.name === "sql.execute" && s.start >= round.sent && s.end <= round.seen)
  return { count: statements.length, ms: statements.reduce((a, s) => a + (s.end - s.start), 0) }
}

/** A run of sequential round trips: p50 wall time, CPU of this process per round trip, and each round's marks. */
export interface Rounds {
  readonly p50: number
  readonly cpuMs: number
  readonly marks: ReadonlyArray<RoundMarks>
}

/**
 * `warmup` unmeasured round trips, then `n` measured, one after the other: the next is sent as
 * soon as the reply is seen, or `gapMs` later. `tick` (the recorder's) notes the CPU clock around
 * each. CPU per round trip counts the gaps too (the tail of a turn runs in them).
 */
export const runRounds = async (warmup: number, n: number, one: (i: number) => Promise<RoundMarks>, options: { readonly tick?: () => void; readonly gapMs?: number } = {}): Promise<Rounds> => {
  const { tick = () => {}, gapMs = 0 } = options
  const marks: Array<RoundMarks> = []
  let cpu = cpuNow()
  for (let i = 0; i < warmup + n; i++) {
    if (i === warmup) cpu = cpuNow()
    tick()
    const m = await one(i)
    tick()
    if (i >= warmup) marks.push(m)
    if (gapMs > 0) await new Promise((resolve) => setTimeout(resolve, gapMs))
  }
  return { p50: median(marks.map((m) => m.seen - m.sent)), cpuMs: (cpuNow() - cpu) / n, marks }
}

/**
 * The pipeline with no platform: a connection runtime that ingests in-process and a channel whose
 * send resolves at once, on a file database with the scripted core, messages `gapMs` apart. What
 * the host costs a message whatever the platform.
 */
export const pipelineAlone = async (warmup: number, n: number, gapMs: number): Promise<Rounds> => {
  const dir = tempDir()
  const config = Either.getOrThrow(decodeConfig({ dataDir: dir, workspaces: [{ id: "main" }], routes: [{ connection: "inproc", place: "*", workspace: "main" }], connections: {} }, "bench"))
  let context: NativeRuntimeContext | undefined
  let waiting: { readonly text: string; readonly done: () => void } | undefined
  const runtime = native({
    name: "inproc",
    isReady: Effect.succeed(true),
    start: (c) => {
      context = c
      return c.bindChannel(nativeChannel({
        name: "inproc",
        idempotentResends: true,
        send: (d) =>
          Effect.sync(() => {
            if (waiting !== undefined && d.text === waiting.text) waiting.done()
          })
      }))
    }
  })
  const scope = Effect.runSync(Scope.make())
  await Effect.runPromise(Layer.buildWithScope(makeTestHost(config, { databaseFile: path.join(dir, "pynchy.db"), runtimes: [{ plugin: "bench", value: runtime }] }), scope))
  try {
    return await runRounds(warmup, n, async (i) => {
      const text = `alone ${i}`
      let received = 0
      const seen = new Promise<void>((resolve) => (waiting = { text: `echo: ${text}`, done: () => (received = performance.now(), resolve()) }))
      const sent = performance.now()
      await Effect.runPromise(context!.ingest({ connection: "inproc", place: "p", providerEventId: `e${i}`, sender: "bench", text }))
      await seen
      return { sent, received, seen: performance.now() }
    }, { gapMs })
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

/** The pause between messages of the spaced run: longer than a turn's tail (settling the send, completing the turn). */
export const SPACED_MS = 50

/**
 * The rows of a channel bench: the host's p50 against the bare bot's (the lower of its runs
 * before and after the host), the difference, CPU per round trip for both, the host's p50 with
 * messages spaced, then (from the spaced run) each stage's wall time against the CPU used in it
 * (p50s; a ratio above 1 is waiting), the send's tail after the fake has the message, and the SQL
 * statements per round trip and their time.
 */
export const channelRows = (options: {
  readonly what: string
  readonly bare: string
  /** Back to back: the headline, as every channel bench measured it before (and the bare bot is). */
  readonly host: Rounds
  /** The same host with SPACED_MS between messages: the stages are measured here. */
  readonly spaced: Rounds
  /** The pipeline with no platform (`pipelineAlone`), SPACED_MS apart, in the same run. */
  readonly alone: Rounds
  readonly bareRuns: ReadonlyArray<Rounds>
  readonly recorder: ReturnType<typeof spanRecorder>
  readonly load: string
}): Array<Row> => {
  const { host, load } = options
  const { spans, clock } = options.recorder
  const bare = options.bareRuns.reduce((a, b) => (b.p50 < a.p50 ? b : a))
  // The stages are one message's: from the spaced run, where no earlier turn's tail runs in them.
  const marked = options.spaced.marks.map((r) => marksOf(spans, r)).filter((m) => m !== undefined)
  if (marked.length === 0) throw new Error(`${options.what}: no round trip had the pipeline's spans (was the recording tracer given to the host?)`)
  const rows: Array<Row> = [
    { name: `${options.what}, p50 (scripted core; ${load})`, value: host.p50, unit: "ms", baseline: { name: options.bare, value: bare.p50 } },
    { name: "host's share of the round trip (difference of p50s)", value: Math.max(0, host.p50 - bare.p50), unit: "ms" },
    { name: "CPU of this process per round trip (host, fake, bench)", value: host.cpuMs, unit: "ms", baseline: { name: "the same with the bare bot", value: bare.cpuMs } },
    { name: `the host with ${SPACED_MS} ms between messages, p50`, value: options.spaced.p50, unit: "ms", baseline: { name: "back to back", value: host.p50 } },
    { name: `CPU per message, host with ${SPACED_MS} ms between messages`, value: options.spaced.cpuMs, unit: "ms", baseline: { name: "the pipeline alone (in-process channel, no platform)", value: options.alone.cpuMs } },
    { name: "the pipeline alone (in-process channel, no platform), p50", value: options.alone.p50, unit: "ms" }
  ]
  let previous: Mark = "sent"
  for (const [label, mark] of STAGES) {
    const from: Mark = previous
    rows.push({
      name: `stage: ${label}, p50`,
      value: median(marked.map((m) => m[mark] - m[from])),
      unit: "ms",
      baseline: { name: "CPU used in it, p50", value: median(marked.map((m) => cpuAt(clock, m[mark]) - cpuAt(clock, m[from]))) }
    })
    previous = mark
  }
  const sql = options.spaced.marks.map((r) => sqlOf(spans, r))
  rows.push(
    { name: "after the stages: fake receives the call → the send settled (client's answer, part and delivery rows), p50", value: median(marked.map((m) => m.sendEnded - m.received)), unit: "ms" },
    { name: "stages: round trips with every span", value: marked.length, unit: `of ${options.spaced.marks.length}` },
    { name: "SQL statements per round trip, p50", value: median(sql.map((s) => s.count)), unit: "stmts" },
    { name: "SQL time per round trip (sum of statements), p50", value: median(sql.map((s) => s.ms)), unit: "ms" }
  )
  return rows
}

/** The 1-minute load average, for the row names (figures on a shared box mean little without it). */
export const loadNow = () => `load ${os.loadavg()[0]!.toFixed(1)}`
