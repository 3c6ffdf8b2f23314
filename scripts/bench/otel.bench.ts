/**
 * The cost of OpenTelemetry export (issue 15, item 7: ≤ 10%) on the pipeline's two figures, with
 * and without export in the same run, interleaved round by round:
 *   1. `Ingest.ingest` throughput and CPU per message (pipeline.bench's ingest run; with export,
 *      the telemetry layer under it, sending to a receiver);
 *   2. committed → executor entry p50/p99 (pipeline.bench's latency run on the test host, whose
 *      stack reads OTEL_EXPORTER_OTLP_ENDPOINT).
 * The receiver is a separate process (a node:http server that counts the spans it decodes), so
 * its work is not counted as ours; the exporter's (batching, serialising, sending) is. Also: what
 * the always-on part costs when export is off, the span Ingest makes per message.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { Context, Effect, Exit, Option } from "effect"
import * as Telemetry from "../../src/telemetry/Telemetry.js"
import { ingestRun, latencyRun, load, withTempDir } from "./pipeline.bench.js"
import { median, percentile } from "./stats.js"
import type { Row } from "./types.js"

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const LATENCY_SAMPLES = 1_000
const LATENCY_WARMUP = 100
const SPAN_N = 200_000

const progress = (line: string) => process.stderr.write(`  otel: ${line}\n`)
const fmt = (n: number) => Math.round(n).toLocaleString("en-US")

const RECEIVER = `
const http = require("node:http")
let spans = 0
const server = http.createServer((req, res) => {
  const chunks = []
  req.on("data", (c) => chunks.push(c))
  req.on("end", () => {
    if (req.method === "GET") return res.end(String(spans))
    if (req.url === "/v1/traces") for (const rs of JSON.parse(Buffer.concat(chunks)).resourceSpans) for (const ss of rs.scopeSpans) spans += ss.spans.length
    res.writeHead(200, { "content-type": "application/json" }).end("{}")
  })
})
server.listen(0, "127.0.0.1", () => console.log(server.address().port))
`

const startReceiver = () =>
  new Promise<{ child: ChildProcess; endpoint: string }>((resolve, reject) => {
    const child = spawn(process.execPath, ["-e", RECEIVER], { stdio: ["ignore", "pipe", "inherit"] })
    child.stdout!.once("data", (d: Buffer) => resolve({ child, endpoint: `http://127.0.0.1:${d.toString().trim()}` }))
    child.once("error", reject)
  })

const spansReceived = (endpoint: string) => fetch(endpoint).then((r) => r.text()).then(Number)

/**
 * The span Ingest makes per message with export off: the native tracer's span made, given an
 * attribute and ended, in a plain loop (a burst fetches the tracer and the clock once), against
 * `Effect.useSpan` around an effect (what Ingest used before, one run each) and the same effect
 * without a span: CPU µs per message.
 */
const spanCost = () => {
  const tracer = Effect.runSync(Effect.tracer)
  const clock = Effect.runSync(Effect.clock)
  const bare = Effect.succeed(1)
  const useSpan = Effect.useSpan("Ingest.ingest", { root: true, kind: "consumer", captureStackTrace: false }, () => bare)
  const time = (f: () => void) => {
    for (let i = 0; i < SPAN_N / 10; i++) f()
    const c0 = process.cpuUsage()
    for (let i = 0; i < SPAN_N; i++) f()
    const c = process.cpuUsage(c0)
    return (c.user + c.system) / SPAN_N
  }
  const direct = time(() => {
    const span = tracer.span("Ingest.ingest", Option.none(), Context.empty(), [], clock.unsafeCurrentTimeNanos(), "consumer", { root: true, captureStackTrace: false })
    span.attribute("pynchy.message.id", 1)
    span.end(clock.unsafeCurrentTimeNanos(), Exit.void)
  })
  return { bare: time(() => Effect.runSync(bare)), spanned: direct, useSpan: time(() => Effect.runSync(useSpan)) }
}

export default async (): Promise<Array<Row>> => {
  const receiver = await startReceiver()
  const telemetry = Telemetry.layer({ endpoint: receiver.endpoint, serviceName: "pynchy-bench" })
  const off = { rate: [] as Array<number>, cpu: [] as Array<number>, p50: [] as Array<number>, p99: [] as Array<number> }
  const on = { rate: [] as Array<number>, cpu: [] as Array<number>, p50: [] as Array<number>, p99: [] as Array<number> }
  let exported = 0
  let created = 0
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const a = await withTempDir((d) => ingestRun(d))
      const before = await spansReceived(receiver.endpoint)
      const b = await withTempDir((d) => ingestRun(d, "none", telemetry))
      exported += (await spansReceived(receiver.endpoint)) - before
      created += 52_000
      off.rate.push(a.perSecond)
      off.cpu.push(a.cpuUs)
      on.rate.push(b.perSecond)
      on.cpu.push(b.cpuUs)
      delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT
      const la = await withTempDir((d) => latencyRun(d, LATENCY_SAMPLES, LATENCY_WARMUP))
      process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.endpoint
      const lb = await withTempDir((d) => latencyRun(d, LATENCY_SAMPLES, LATENCY_WARMUP)).finally(() => {
        delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT
      })
      off.p50.push(percentile(la, 50))
      off.p99.push(percentile(la, 99))
      on.p50.push(percentile(lb, 50))
      on.p99.push(percentile(lb, 99))
      progress(
        `round ${round + 1} (${load()}): ingest ${fmt(a.perSecond)}/s ${a.cpuUs.toFixed(1)} cpu µs/msg without, ${fmt(b.perSecond)}/s ${b.cpuUs.toFixed(1)} with export; ` +
          `committed → executor p50 ${off.p50[round]!.toFixed(3)} / ${on.p50[round]!.toFixed(3)} ms, p99 ${off.p99[round]!.toFixed(3)} / ${on.p99[round]!.toFixed(3)} ms (without / with)`
      )
    }
  } finally {
    receiver.child.kill()
  }
  const span = spanCost()
  progress(`Effect span per ingest with export off: ${span.spanned.toFixed(2)} cpu µs (Effect.useSpan ${span.useSpan.toFixed(2)}) vs ${span.bare.toFixed(2)} without; spans exported by the ingest runs ${fmt(exported)} of ${fmt(created)} messages`)
  const n = `median of ${ROUNDS}, interleaved`
  return [
    { name: `Ingest.ingest with OTel export (${n})`, value: median(on.rate), unit: "msgs/s", baseline: { name: "without export", value: median(off.rate) }, goal: "≥ 0.9x (≤ 10% slower)" },
    { name: `Ingest.ingest CPU per message with OTel export (${n})`, value: median(on.cpu), unit: "µs", baseline: { name: "without export", value: median(off.cpu) }, goal: "≤ 1.1x" },
    { name: `committed → executor entry p50 with OTel export (${fmt(LATENCY_SAMPLES)} samples, ${n})`, value: median(on.p50), unit: "ms", baseline: { name: "without export", value: median(off.p50) }, goal: "≤ 1.1x" },
    { name: `committed → executor entry p99 with OTel export (${fmt(LATENCY_SAMPLES)} samples, ${n})`, value: median(on.p99), unit: "ms", baseline: { name: "without export", value: median(off.p99) }, goal: "≤ 1.1x" },
    { name: "Ingest spans received by the OTLP receiver, per message ingested", value: exported / created, unit: "spans/msg" },
    { name: "Ingest's span per message, export off (CPU per message)", value: span.spanned, unit: "µs" },
    { name: "Effect.useSpan around an effect (Ingest's way before), export off", value: span.useSpan, unit: "µs", baseline: { name: "the effect without a span", value: span.bare } }
  ]
}
