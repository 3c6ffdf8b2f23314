/**
 * The gateway's overhead against calling the same upstream directly, in one run:
 *   - sequential: added latency p50 / p99 (gateway p - direct p);
 *   - 32 concurrent: requests/s through the gateway vs direct, and the added p50 / p99;
 *   - RSS after N requests through the gateway (and its growth over the second half);
 *   - the proxy limit: a bare node:http proxy (unix socket in, pooled keep-alive agent out, bodies
 *     piped, no token, no accounting) on the same main thread, in the same rounds, so the
 *     gateway's throughput is also a ratio to what any node proxy gets on this machine;
 *   - the main thread's GC pauses per 1,000 concurrent requests, gateway and bare proxy: a
 *     request whose objects reach the old generation (see in-flight.ts) shows here first.
 * Threads: the upstream (a node:http server answering a small chat completion) and the load
 * generator each run in a worker thread of this process; the gateway runs on the main thread, as
 * in the host. The client talks to the gateway over its unix socket, as a sandbox does. One token
 * carries all CONCURRENCY requests, so its in-flight cap is raised to that (a turn's default is lower).
 */
import { Effect, Exit, Logger, Redacted, Scope } from "effect"
import * as fs from "node:fs"
import * as http from "node:http"
import * as os from "node:os"
import * as path from "node:path"
import { PerformanceObserver } from "node:perf_hooks"
import { Worker } from "node:worker_threads"
import type { ProviderConfig } from "../../src/config/schema.js"
import { GatewayConfig, GatewayLimits } from "../../src/config/gateway.js"
import { Gateway, GatewaySettings } from "../../src/gateway/Gateway.js"
import type { Row } from "./types.js"
import { median } from "./stats.js"

const SEQUENTIAL = 3_000
const CONCURRENT = 20_000
const CONCURRENCY = 32
const ROUNDS = 3
const SLOW_REQUESTS = 3_200
const RSS_REQUESTS = Number(process.env.PYNCHY_BENCH_GATEWAY_RSS_REQUESTS ?? 100_000)

const UPSTREAM_MS = 20

const upstreamCode = `
const http = require("node:http")
const { parentPort } = require("node:worker_threads")
const body = Buffer.from(JSON.stringify({
  id: "chatcmpl-bench", object: "chat.completion", created: 0, model: "bench-model",
  choices: [{ index: 0, message: { role: "assistant", content: "Hello! How can I help you today?" }, finish_reason: "stop" }],
  usage: { prompt_tokens: 12, completion_tokens: 9, total_tokens: 21 }
}))
const serve = (delayMs) => new Promise((resolve) => {
  const answer = (res) => {
    res.writeHead(200, { "content-type": "application/json", "content-length": body.length })
    res.end(body)
  }
  const server = http.createServer({ keepAliveTimeout: 60000 }, (req, res) => {
    req.resume()
    req.on("end", () => (delayMs > 0 ? setTimeout(answer, delayMs, res) : answer(res)))
  })
  server.listen(0, "127.0.0.1", () => resolve(server.address().port))
})
// The instant upstream, and one taking UPSTREAM_MS per answer (a model's time, roughly).
Promise.all([serve(0), serve(${UPSTREAM_MS})]).then((ports) => parentPort.postMessage(ports))
`

const clientCode = `
const http = require("node:http")
const { parentPort } = require("node:worker_threads")
const { performance } = require("node:perf_hooks")
parentPort.on("message", ({ target, token, n, concurrency, model }) => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency, maxFreeSockets: concurrency })
  const body = Buffer.from(JSON.stringify({ model, messages: [{ role: "user", content: "Say hello." }], max_tokens: 16 }))
  const headers = { "content-type": "application/json", "content-length": body.length }
  if (token) headers.authorization = "Bearer " + token
  const latencies = new Float64Array(n)
  let started = 0, done = 0, failed = 0
  const t0 = performance.now()
  const one = () => {
    if (started >= n) return
    const i = started++
    const s = performance.now()
    const req = http.request({ ...target, agent, method: "POST", path: "/v1/chat/completions", headers }, (res) => {
      if (res.statusCode !== 200) failed++
      res.resume()
      res.on("end", () => {
        latencies[i] = performance.now() - s
        done++
        if (done === n) {
          agent.destroy()
          parentPort.postMessage({ latencies, elapsedMs: performance.now() - t0, failed })
        } else one()
      })
    })
    req.on("error", () => { failed++; done++; one() })
    req.end(body)
  }
  for (let k = 0; k < concurrency; k++) one()
})
`

interface Run {
  readonly latencies: Float64Array
  readonly elapsedMs: number
  readonly failed: number
}

const pct = (xs: Float64Array, p: number) => {
  const s = Float64Array.from(xs).sort()
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!
}
const r3 = (x: number) => Math.round(x * 1000) / 1000

/** Main-thread GC pause time (the gateway's thread) while `f` runs, in ms. */
const gcMsDuring = async <A>(f: () => Promise<A>): Promise<[A, number]> => {
  let ms = 0
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) ms += e.duration
  })
  observer.observe({ entryTypes: ["gc"] })
  try {
    const a = await f()
    await new Promise((resolve) => setImmediate(resolve))
    return [a, ms]
  } finally {
    observer.disconnect()
  }
}

const rssMb = () => Math.round((process.memoryUsage().rss / 2 ** 20) * 10) / 10
/**
 * The main thread's V8 heap: the gateway's own share (RSS also holds the two workers and the
 * runner). After a full GC when node runs with --expose-gc, so it shows what is retained.
 */
const heapMb = () => {
  ;(globalThis as { gc?: () => void }).gc?.()
  return Math.round((process.memoryUsage().heapUsed / 2 ** 20) * 10) / 10
}

/** The proxy limit: forwards every request to the upstream port, nothing else. */
const bareProxy = (socketPath: string, port: number) =>
  new Promise<http.Server>((resolve) => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY, maxFreeSockets: CONCURRENCY })
    const server = http.createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
      const up = http.request({ hostname: "127.0.0.1", port, agent, method: req.method, path: req.url, headers: req.headers }, (ur) => {
        res.writeHead(ur.statusCode ?? 502, ur.headers)
        ur.pipe(res)
      })
      up.on("error", () => res.destroy())
      req.pipe(up)
    })
    server.listen(socketPath, () => resolve(server))
  })

export default async function(): Promise<Array<Row>> {
  const upstream = new Worker(upstreamCode, { eval: true })
  const client = new Worker(clientCode, { eval: true })
  const scope = Effect.runSync(Scope.make())
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "pynchy-bench-gw-"))
  let proxy: http.Server | undefined
  try {
    const [port, slowPort] = await new Promise<[number, number]>((resolve) => upstream.once("message", resolve))
    const providers = [
      { name: "bench", kind: "openai-compatible", baseUrl: `http://127.0.0.1:${port}/v1`, models: ["bench"], weight: 1 },
      { name: "slow", kind: "openai-compatible", baseUrl: `http://127.0.0.1:${slowPort}/v1`, models: ["slow"], weight: 1 }
    ] as unknown as ReadonlyArray<ProviderConfig>
    const gateway = await Effect.runPromise(
      Gateway.make.pipe(
        Effect.provideService(GatewaySettings, { dataDir, providers, gateway: GatewayConfig.make({ limits: GatewayLimits.make({ inFlightPerToken: CONCURRENCY }) }) }),
        Scope.extend(scope),
        Effect.provide(Logger.remove(Logger.defaultLogger))
      )
    )
    const minted = await Effect.runPromise(gateway.mintToken({ workspace: "bench", conversationId: "bench", expiresAt: Date.now() + 3_600_000 }))
    const token = Redacted.value(minted.token)
    proxy = await bareProxy(path.join(dataDir, "bare-proxy.sock"), port)
    const direct = { target: { hostname: "127.0.0.1", port }, token: undefined, model: "bench" }
    const bare = { target: { socketPath: path.join(dataDir, "bare-proxy.sock") }, token: undefined, model: "bench" }
    const through = { target: { socketPath: gateway.socketPath! }, token, model: "bench" }
    const slowDirect = { target: { hostname: "127.0.0.1", port: slowPort }, token: undefined, model: "slow" }
    const slowThrough = { target: { socketPath: gateway.socketPath! }, token, model: "slow" }
    const run = (how: { target: object; token: string | undefined; model: string }, n: number, concurrency: number) =>
      new Promise<Run>((resolve, reject) => {
        client.once("message", (r: Run) => (r.failed > 0 ? reject(new Error(`${r.failed} requests failed`)) : resolve(r)))
        client.postMessage({ ...how, n, concurrency })
      })

    // Warm up both paths (JIT, pooled sockets).
    await run(direct, 2_000, CONCURRENCY)
    await run(through, 2_000, CONCURRENCY)
    await run(bare, 2_000, CONCURRENCY)

    const seq = { d50: [] as Array<number>, d99: [] as Array<number>, g50: [] as Array<number>, g99: [] as Array<number> }
    const gc = { g: [] as Array<number>, b: [] as Array<number> }
    const con = { drps: [] as Array<number>, grps: [] as Array<number>, brps: [] as Array<number>, b50: [] as Array<number>, d50: [] as Array<number>, d99: [] as Array<number>, g50: [] as Array<number>, g99: [] as Array<number> }
    // Interleaved rounds: drift on a shared machine hits both paths alike.
    for (let round = 0; round < ROUNDS; round++) {
      const sd = await run(direct, SEQUENTIAL, 1)
      const sg = await run(through, SEQUENTIAL, 1)
      seq.d50.push(pct(sd.latencies, 50)); seq.d99.push(pct(sd.latencies, 99))
      seq.g50.push(pct(sg.latencies, 50)); seq.g99.push(pct(sg.latencies, 99))
      const cd = await run(direct, CONCURRENT, CONCURRENCY)
      const [cg, gcg] = await gcMsDuring(() => run(through, CONCURRENT, CONCURRENCY))
      const [cb, gcb] = await gcMsDuring(() => run(bare, CONCURRENT, CONCURRENCY))
      gc.g.push((gcg / CONCURRENT) * 1000); gc.b.push((gcb / CONCURRENT) * 1000)
      con.brps.push(CONCURRENT / (cb.elapsedMs / 1000)); con.b50.push(pct(cb.latencies, 50))
      con.drps.push(CONCURRENT / (cd.elapsedMs / 1000)); con.grps.push(CONCURRENT / (cg.elapsedMs / 1000))
      con.d50.push(pct(cd.latencies, 50)); con.d99.push(pct(cd.latencies, 99))
      con.g50.push(pct(cg.latencies, 50)); con.g99.push(pct(cg.latencies, 99))
    }

    // With an upstream that takes time, as a model does, the gateway should cost next to nothing.
    const slow = { d: [] as Array<number>, g: [] as Array<number> }
    for (let round = 0; round < ROUNDS; round++) {
      slow.d.push(SLOW_REQUESTS / ((await run(slowDirect, SLOW_REQUESTS, CONCURRENCY)).elapsedMs / 1000))
      slow.g.push(SLOW_REQUESTS / ((await run(slowThrough, SLOW_REQUESTS, CONCURRENCY)).elapsedMs / 1000))
    }

    const rssBefore = rssMb()
    const heapBefore = heapMb()
    await run(through, RSS_REQUESTS / 2, CONCURRENCY)
    const rssHalf = rssMb()
    const t0 = performance.now()
    await run(through, RSS_REQUESTS / 2, CONCURRENCY)
    const rssAfter = rssMb()
    const heapAfter = heapMb()
    const lastHalfRps = (RSS_REQUESTS / 2) / ((performance.now() - t0) / 1000)

    return [
      { name: "sequential: added latency p50", value: r3(median(seq.g50) - median(seq.d50)), unit: "ms", goal: "≤ 0.2 ms" },
      { name: "sequential: added latency p99", value: r3(median(seq.g99) - median(seq.d99)), unit: "ms", goal: "≤ 2 ms" },
      { name: "sequential: latency p50 through the gateway", value: r3(median(seq.g50)), unit: "ms", baseline: { name: "direct", value: r3(median(seq.d50)) } },
      { name: `${CONCURRENCY} concurrent: throughput through the gateway`, value: Math.round(median(con.grps)), unit: "req/s", baseline: { name: "direct", value: Math.round(median(con.drps)) }, goal: "≥ 5,000 req/s, ≥ 0.8 of direct" },
      { name: `${CONCURRENCY} concurrent: throughput through the gateway vs a bare node:http proxy`, value: Math.round(median(con.grps)), unit: "req/s", baseline: { name: "bare proxy", value: Math.round(median(con.brps)) }, goal: "≥ 0.8 of the bare proxy" },
      { name: `${CONCURRENCY} concurrent: bare node:http proxy throughput`, value: Math.round(median(con.brps)), unit: "req/s", baseline: { name: "direct", value: Math.round(median(con.drps)) } },
      { name: `${CONCURRENCY} concurrent: main-thread GC pauses per 1,000 requests through the gateway`, value: r3(median(gc.g)), unit: "ms", baseline: { name: "bare proxy", value: r3(median(gc.b)) } },
      { name: `${CONCURRENCY} concurrent: latency p50 through the gateway`, value: r3(median(con.g50)), unit: "ms", baseline: { name: "bare proxy", value: r3(median(con.b50)) } },
      { name: `${CONCURRENCY} concurrent: added latency p50`, value: r3(median(con.g50) - median(con.d50)), unit: "ms" },
      { name: `${CONCURRENCY} concurrent: added latency p99`, value: r3(median(con.g99) - median(con.d99)), unit: "ms" },
      { name: `${CONCURRENCY} concurrent, upstream taking ${UPSTREAM_MS} ms: throughput through the gateway`, value: Math.round(median(slow.g)), unit: "req/s", baseline: { name: "direct", value: Math.round(median(slow.d)) }, goal: "≥ 0.8 of direct" },
      { name: `RSS after ${RSS_REQUESTS.toLocaleString("en-US")} requests through the gateway`, value: rssAfter, unit: "MB", baseline: { name: "before them", value: rssBefore }, goal: "bounded" },
      { name: `main-thread heap after ${RSS_REQUESTS.toLocaleString("en-US")} requests`, value: heapAfter, unit: "MB", baseline: { name: "before them", value: heapBefore } },
      { name: `RSS growth over the last ${(RSS_REQUESTS / 2).toLocaleString("en-US")} requests`, value: r3(rssAfter - rssHalf), unit: "MB", goal: "≈ 0 (no leak)" },
      { name: "throughput during the RSS run", value: Math.round(lastHalfRps), unit: "req/s" }
    ]
  } finally {
    proxy?.closeAllConnections()
    proxy?.close()
    await Effect.runPromise(Scope.close(scope, Exit.void))
    await upstream.terminate()
    await client.terminate()
    fs.rmSync(dataDir, { recursive: true, force: true })
  }
}
