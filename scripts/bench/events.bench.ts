/**
 * The cost of the event bus and its SQLite observer (the event log) on the pipeline's figures
 * (issue 15, item 7): `Ingest.ingest` throughput and committed → executor entry latency, each
 * measured with a bus that does nothing (the baseline) and with the host's bus + event log, in
 * the same run, rounds interleaved. Goal: at most 5% slower.
 */
import { ingestRun, latencyRun, withTempDir } from "./pipeline.bench.js"
import { median, percentile } from "./stats.js"
import type { Row } from "./types.js"

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const LATENCY_SAMPLES = 1_000
const LATENCY_WARMUP = 100
const progress = (line: string) => process.stderr.write(`  events: ${line}\n`)

export default async (): Promise<Array<Row>> => {
  const ingest = { none: [] as Array<number>, log: [] as Array<number>, cpuNone: [] as Array<number>, cpuLog: [] as Array<number> }
  for (let i = 0; i < ROUNDS; i++) {
    const none = await withTempDir((dir) => ingestRun(dir, "none"))
    const log = await withTempDir((dir) => ingestRun(dir, "event-log"))
    ingest.none.push(none.perSecond)
    ingest.log.push(log.perSecond)
    ingest.cpuNone.push(none.cpuUs)
    ingest.cpuLog.push(log.cpuUs)
    progress(`ingest round ${i + 1}: no bus ${Math.round(none.perSecond)}/s, bus + event log ${Math.round(log.perSecond)}/s`)
  }
  const latency = { none: [] as Array<number>, log: [] as Array<number> }
  for (let i = 0; i < ROUNDS; i++) {
    latency.none.push(...(await withTempDir((dir) => latencyRun(dir, LATENCY_SAMPLES, LATENCY_WARMUP, "none"))))
    latency.log.push(...(await withTempDir((dir) => latencyRun(dir, LATENCY_SAMPLES, LATENCY_WARMUP, "event-log"))))
    progress(`latency round ${i + 1} done`)
  }
  return [
    { name: "Ingest.ingest with bus + event log", value: median(ingest.log), unit: "msgs/s", baseline: { name: "no bus", value: median(ingest.none) }, goal: "≥ 0.95× (≤ 5% slower)" },
    { name: "Ingest.ingest CPU per message with bus + event log", value: median(ingest.cpuLog), unit: "µs", baseline: { name: "no bus", value: median(ingest.cpuNone) } },
    { name: "committed → executor entry p50 with bus + event log", value: percentile(latency.log, 50), unit: "ms", baseline: { name: "no bus", value: percentile(latency.none, 50) }, goal: "≤ 1.05×" },
    { name: "committed → executor entry p99 with bus + event log", value: percentile(latency.log, 99), unit: "ms", baseline: { name: "no bus", value: percentile(latency.none, 99) } }
  ]
}
