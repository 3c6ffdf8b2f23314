/**
 * Streaming, end to end below the host: from a scripted OpenAI-compatible upstream writing the
 * first SSE chunk of a streamed chat completion (its `performance.now()` just before the write)
 * to the host taking the runner's first `text_delta` off the IPC queue. The path in between is
 * the real one: the real gateway (in this process), the real runner bundle in real bwrap (a new
 * sandbox per turn, as test/agent/harness.ts runs it), the runner's openai core and the IPC
 * socket. harness.ts records events without arrival times, so its pieces are reused here and
 * the IPC events are timed as they are taken (its serve loop, with a clock read).
 *
 * The upstream writes the first chunk (role and the first text) alone and the rest 30 ms later,
 * so the first delta is never carried along by the end of the stream.
 *
 * Baseline: the same upstream's first byte to a plain node client (`http.request`, no gateway,
 * no sandbox) reading the same stream, same process, interleaved with the turns.
 * 3 warm-up turns, then 20 timed; p50 and p99. The host share after the IPC (turn progress →
 * channel progress) is stream.bench's figure, run here too so the total is one run's sum.
 */
import { Clock, Effect, Logger, LogLevel, Redacted } from "effect"
import * as http from "node:http"
import * as Bwrap from "../../src/sandbox/runtimes/bwrap.js"
import { baseSpec, startRunner } from "../../test/agent/harness.js"
import { provider, scriptedUpstream, startGateway } from "../../test/gateway/support.js"
import { median, percentile } from "./stats.js"
import streamBench from "./stream.bench.js"
import type { Row } from "./types.js"

const WARMUP = 3
const TURNS = 20
const DIRECT_PER_TURN = 3
const KEY_ENV = "PYNCHY_BENCH_FIRST_DELTA_KEY"
const GOAL = "≤ 5 ms over the upstream's first byte"

const chunk = (delta: unknown, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: "chatcmpl-b", object: "chat.completion.chunk", model: "tiny", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`
const usage = `data: ${JSON.stringify({ id: "chatcmpl-b", object: "chat.completion.chunk", model: "tiny", choices: [], usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 } })}\n\n`

/** A plain node client: POST the stream request straight to the upstream, resolve at its first body chunk. */
const directFirstChunk = (url: string): Promise<number> =>
  new Promise((resolve, reject) => {
    const u = new URL(`${url}/chat/completions`)
    const body = Buffer.from(JSON.stringify({ model: "tiny", stream: true, messages: [{ role: "user", content: "hello" }] }))
    const req = http.request({ hostname: u.hostname, port: Number(u.port), path: u.pathname, method: "POST", headers: { "content-type": "application/json", "content-length": body.length } }, (res) => {
      let at: number | undefined
      res.on("data", () => (at ??= performance.now()))
      res.on("end", () => (at === undefined ? reject(new Error("the direct stream held no body")) : resolve(at)))
      res.on("error", reject)
    })
    req.on("error", reject)
    req.end(body)
  })

export default async (): Promise<Array<Row>> => {
  const sandboxMs: Array<number> = []
  const directMs: Array<number> = []
  const program = Effect.gen(function* () {
    process.env[KEY_ENV] = "sk-bench-first-delta"
    yield* Effect.addFinalizer(() => Effect.sync(() => delete process.env[KEY_ENV]))
    // The first byte of each request, by request number (1-based, as the script gets it).
    const firstByte: Array<number> = []
    const upstream = yield* scriptedUpstream((_hit, res, n) => {
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
      firstByte[n] = performance.now()
      res.write(chunk({ role: "assistant", content: "Hi" }))
      setTimeout(() => {
        res.write(chunk({ content: " there" }))
        res.write(chunk({}, "stop"))
        res.write(usage)
        res.end("data: [DONE]\n\n")
      }, 30)
    })
    const gw = yield* Effect.orDie(startGateway([provider({ name: "up", baseUrl: upstream.url, apiKeyEnv: KEY_ENV, models: ["tiny"] })]))
    const runtime = Bwrap.make()

    const turn = (i: number) =>
      Effect.scoped(Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        const minted = yield* gw.mintToken({ workspace: "main", conversationId: "test:room", models: ["tiny"], expiresAt: now + 120_000 })
        const hitsBefore = upstream.hits.length
        const { ipc, handle } = yield* startRunner({ spec: { ...baseSpec("openai"), turnId: i + 1 }, gatewaySocket: gw.socketPath!, token: Redacted.value(minted.token), runtime })
        let firstDelta: number | undefined
        const seen: Array<string> = []
        const serve = Effect.gen(function* () {
          while (true) {
            const e = yield* ipc.events.take
            if (e._tag === "text_delta" && firstDelta === undefined) firstDelta = performance.now()
            seen.push(e._tag === "error" ? `error:${e.code}` : e._tag)
            if (e._tag === "closed") return
          }
        })
        yield* Effect.raceFirst(serve, Effect.zipRight(Effect.promise(() => handle.exited), Effect.sleep("200 millis"))).pipe(
          Effect.timeout("90 seconds"),
          Effect.orDie
        )
        const sent = firstByte[hitsBefore + 1]
        if (firstDelta === undefined || sent === undefined) {
          return yield* Effect.die(new Error(`turn ${i}: no first delta or no upstream request (runner said: ${seen.join(", ")})`))
        }
        return firstDelta - sent
      }))

    for (let i = 0; i < WARMUP + TURNS; i++) {
      for (let k = 0; k < DIRECT_PER_TURN; k++) {
        const n = upstream.hits.length + 1
        const at = yield* Effect.promise(() => directFirstChunk(upstream.url))
        if (i >= WARMUP) directMs.push(at - firstByte[n]!)
      }
      const took = yield* turn(i)
      if (i >= WARMUP) sandboxMs.push(took)
    }
  })
  await Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(Logger.minimumLogLevel(LogLevel.Error))))

  // The host share after the IPC, measured now, in this run.
  const host = (await streamBench())[0]!
  const p50 = median(sandboxMs)
  const p99 = percentile(sandboxMs, 99)
  const direct = { p50: median(directMs), p99: percentile(directMs, 99) }
  return [
    { name: "first delta: upstream first byte → host IPC text_delta, p50", value: p50, unit: "ms", baseline: { name: "plain node client on the upstream, p50", value: direct.p50 } },
    { name: "first delta: upstream first byte → host IPC text_delta, p99", value: p99, unit: "ms", baseline: { name: "plain node client on the upstream, p99", value: direct.p99 } },
    { name: "host share: turn progress → channel progress, p50 (stream.bench)", value: host.value, unit: "ms" },
    { name: "first delta to the channel over the upstream's first byte, p50 (sum)", value: p50 + host.value, unit: "ms", baseline: { name: "plain node client, p50", value: direct.p50 }, goal: GOAL }
  ]
}
