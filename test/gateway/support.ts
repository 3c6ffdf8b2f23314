/** Helpers for the gateway tests: a scripted upstream and a small HTTP client over the socket. */
import { Effect, Fiber, Logger, Option, Schema, type Scope, TestClock } from "effect"
import * as http from "node:http"
import type * as net from "node:net"
import { type ProviderConfig } from "../../src/config/schema.js"
import { GatewayConfig } from "../../src/config/gateway.js"
import { Gateway, GatewaySettings } from "../../src/gateway/Gateway.js"
import { tempDir } from "../support/db.js"

export interface Hit {
  readonly path: string
  readonly headers: http.IncomingHttpHeaders
  readonly body: any
}

export type Script = (hit: Hit, res: http.ServerResponse, n: number) => void

export interface Upstream {
  readonly url: string
  readonly hits: Array<Hit>
  /** Resolves when the upstream has seen `n` requests. */
  readonly awaitHits: (n: number) => Effect.Effect<void>
}

/** An in-process upstream on a free 127.0.0.1 port, answering each request with the script. */
export const scriptedUpstream = (script: Script): Effect.Effect<Upstream, never, Scope.Scope> =>
  Effect.gen(function* () {
    const hits: Array<Hit> = []
    const waiters: Array<{ n: number; wake: () => void }> = []
    const sockets = new Set<net.Socket>()
    const server = http.createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8")
        let body: unknown = text
        try {
          body = JSON.parse(text)
        } catch {
          // keep the text
        }
        const hit = { path: req.url ?? "/", headers: req.headers, body }
        hits.push(hit)
        for (const w of waiters.filter((w) => hits.length >= w.n)) w.wake()
        script(hit, res, hits.length)
      })
    })
    server.on("connection", (s) => {
      sockets.add(s)
      s.on("close", () => sockets.delete(s))
    })
    yield* Effect.acquireRelease(
      Effect.async<void>((resume) => {
        server.listen(0, "127.0.0.1", () => resume(Effect.void))
      }),
      () => Effect.sync(() => {
        for (const s of sockets) s.destroy()
        server.close()
      })
    )
    const port = (server.address() as net.AddressInfo).port
    return {
      url: `http://127.0.0.1:${port}/v1`,
      hits,
      awaitHits: (n) =>
        Effect.async<void>((resume) => {
          if (hits.length >= n) return resume(Effect.void)
          waiters.push({ n, wake: () => resume(Effect.void) })
        })
    }
  })

export const chatAnswer = (model: string, usage = { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 }) =>
  JSON.stringify({
    id: "chatcmpl-1",
    object: "chat.completion",
    model,
    choices: [{ index: 0, message: { role: "assistant", content: "hello" }, finish_reason: "stop" }],
    usage
  })

export const json = (res: http.ServerResponse, status: number, body: string, headers: Record<string, string> = {}) => {
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body), ...headers })
  res.end(body)
}

export interface Reply {
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
  readonly body: string
  /** The body as the chunks arrived. */
  readonly chunks: ReadonlyArray<string>
}

export interface CallOptions {
  readonly method?: string
  readonly path: string
  readonly token?: string
  readonly header?: "bearer" | "x-api-key"
  readonly body?: unknown
  /** More request headers (`anthropic-beta`, `anthropic-version`). */
  readonly headers?: Readonly<Record<string, string>>
  /** Called with each chunk as it arrives. */
  readonly onChunk?: (chunk: string) => void
}

/** One HTTP request to the gateway's socket (or a URL base); fails only on a transport error. */
export const call = (target: { socketPath: string } | { url: string }, opts: CallOptions): Effect.Effect<Reply, Error> =>
  Effect.async<Reply, Error>((resume) => {
    const body = opts.body === undefined ? undefined : Buffer.from(typeof opts.body === "string" ? opts.body : JSON.stringify(opts.body))
    const headers: http.OutgoingHttpHeaders = { "content-type": "application/json", ...opts.headers }
    if (body) headers["content-length"] = body.length
    if (opts.token !== undefined) {
      if (opts.header === "x-api-key") headers["x-api-key"] = opts.token
      else headers.authorization = `Bearer ${opts.token}`
    }
    const base = "socketPath" in target ? { socketPath: target.socketPath } : (() => {
      const u = new URL(target.url)
      return { hostname: u.hostname, port: Number(u.port) }
    })()
    const req = http.request({ ...base, method: opts.method ?? (body ? "POST" : "GET"), path: opts.path, headers, agent: false }, (res) => {
      const chunks: Array<string> = []
      res.setEncoding("utf8")
      res.on("data", (c: string) => {
        chunks.push(c)
        opts.onChunk?.(c)
      })
      const done = () => resume(Effect.succeed({ status: res.statusCode ?? 0, headers: res.headers, body: chunks.join(""), chunks }))
      res.on("end", done)
      res.on("error", done)
      res.on("aborted", done)
    })
    req.on("error", (e) => resume(Effect.fail(e)))
    req.end(body)
    return Effect.sync(() => req.destroy())
  })

export const provider = (fields: Partial<ProviderConfig> & Pick<ProviderConfig, "name" | "baseUrl">): ProviderConfig =>
  ({ kind: "openai-compatible", models: [], weight: 1, ...fields }) as ProviderConfig

/** A gateway on a fresh data dir, in the current scope; `gateway` is the YAML form of the section. */
export const startGateway = (providers: ReadonlyArray<ProviderConfig>, gateway: typeof GatewayConfig.Encoded = {}) =>
  Gateway.make.pipe(
    Effect.provideService(GatewaySettings, { dataDir: tempDir("pynchy-gw-"), providers, gateway: Schema.decodeUnknownSync(GatewayConfig)(gateway) })
  )

/** Every log line (message and annotations) written while `effect` runs. */
export const capturingLogs = (lines: Array<string>) =>
  Logger.replace(
    Logger.defaultLogger,
    Logger.make(({ message, annotations }) => {
      lines.push(JSON.stringify({ message, annotations: Object.fromEntries(annotations) }))
    })
  )


/**
 * Runs `effect` (a request through the gateway) while moving the TestClock on in steps, so
 * backoffs, Retry-After waits and timeouts on the gateway's side pass without real sleeping.
 */
export const drivingClock = <A, E, R>(effect: Effect.Effect<A, E, R>, stepMs = 100) =>
  Effect.gen(function* () {
    const fiber = yield* Effect.fork(effect)
    while (true) {
      const exit = yield* Fiber.poll(fiber)
      if (Option.isSome(exit)) return yield* exit.value
      yield* Effect.promise(() => new Promise((r) => setImmediate(r)))
      yield* TestClock.adjust(stepMs)
    }
  })
