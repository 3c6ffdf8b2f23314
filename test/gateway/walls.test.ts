/**
 * Issue 14's gateway findings, reproduced by the attack that broke them: a burst of parallel
 * requests against a small budget (6), a key the upstream splits across chunks (10), and floods
 * of requests and connections (11).
 */
import { assert, describe, it } from "@effect/vitest"
import { Chunk, Deferred, Effect, Either, Exit, Fiber, Queue, Redacted } from "effect"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import type * as http from "node:http"
import * as net from "node:net"
import * as path from "node:path"
import type { GatewayEvent, UsageEvent } from "../../src/gateway/events.js"
import { tempDir } from "../support/db.js"
import { eventually } from "../support/eventually.js"
import { call, chatAnswer, json, provider, type Reply, scriptedUpstream, startGateway } from "./support.js"

const HOUR = 3_600_000
const ask = (extra: object = {}) => ({ model: "m", messages: [{ role: "user", content: "hi" }], ...extra })
const usageEvents = (q: Queue.Dequeue<GatewayEvent>) =>
  Queue.takeAll(q).pipe(Effect.map((c) => Chunk.toArray(c).filter((e): e is UsageEvent => e.type === "gateway.usage")))

/** An upstream that holds every answer until `release`, each spending `spend` tokens. */
const holdingUpstream = (spend = 1_000) =>
  Effect.gen(function* () {
    const held: Array<() => void> = []
    const up = yield* scriptedUpstream((hit, res) => {
      held.push(() => json(res, 200, chatAnswer(hit.body.model, { prompt_tokens: 20, completion_tokens: spend - 20, total_tokens: spend })))
    })
    const release = () => {
      for (const answer of held.splice(0)) answer()
    }
    return { up, held, release }
  })

/** Fires `n` requests at once; returns once each was refused or reached the upstream. */
const burst = (n: number, upstreamHits: () => number, send: () => Effect.Effect<Reply, Error>) =>
  Effect.gen(function* () {
    const before = upstreamHits()
    const fibers = yield* Effect.forEach(Array.from({ length: n }), () => Effect.fork(send()))
    yield* eventually(Effect.sync(() => {
      const returned = fibers.filter((f) => f.unsafePoll() !== null).length
      return returned + upstreamHits() - before === n ? true : undefined
    }), { label: "every request of the burst was refused or reached the upstream" })
    return fibers
  })

describe("walls: budgets hold under bursts (finding 6)", () => {
  it.scoped("20 parallel requests never spend more than a 5,000-token daily budget", () =>
    Effect.gen(function* () {
      const { up, release } = yield* holdingUpstream(1_000)
      const gw = yield* startGateway([provider({ name: "p", baseUrl: up.url, models: ["m"] })], {
        budgets: { workspaces: { main: 5_000, other: 5_000 } },
        limits: { inFlightPerToken: 64 }
      })
      const events = yield* gw.subscribe
      const target = { socketPath: gw.socketPath! }
      const { token } = yield* gw.mintToken({ workspace: "main", conversationId: "c", expiresAt: HOUR })
      const t = Redacted.value(token)

      // Each reserves its max_tokens (1,000) plus an input estimate: four fit, all in flight at once.
      const fibers = yield* burst(20, () => up.hits.length, () => call(target, { path: "/v1/chat/completions", token: t, body: ask({ max_tokens: 1_000 }) }))
      assert.strictEqual(up.hits.length, 4)
      const during = (yield* gw.status).usageToday.main!
      assert.strictEqual(during.used, 0)
      assert.isAtMost(during.reserved, 5_000)
      release()
      const replies = yield* Effect.forEach(fibers, Fiber.join)
      assert.deepStrictEqual(replies.map((r) => r.status).sort(), [...Array(4).fill(200), ...Array(16).fill(429)])
      for (const r of replies.filter((r) => r.status === 429)) assert.strictEqual(JSON.parse(r.body).error.type, "budget_exceeded")
      const spent = (yield* usageEvents(events)).filter((e) => e.workspace === "main").reduce((n, e) => n + e.totalTokens, 0)
      assert.strictEqual(spent, 4_000)
      assert.deepStrictEqual((yield* gw.status).usageToday.main, { used: 4_000, reserved: 0, limit: 5_000 })

      // Settled at the real use: 1,000 left, so a smaller cap fits and the same one does not.
      const tooBig = yield* call(target, { path: "/v1/chat/completions", token: t, body: ask({ max_tokens: 1_000 }) })
      assert.strictEqual(tooBig.status, 429)
      assert.include(JSON.parse(tooBig.body).error.message, "cannot fit this request in its daily token budget")
      const fits = yield* Effect.fork(call(target, { path: "/v1/chat/completions", token: t, body: ask({ max_tokens: 900 }) }))
      yield* up.awaitHits(5)
      release()
      assert.strictEqual((yield* Fiber.join(fits)).status, 200)

      // Without a cap the default estimate (4,096) is reserved; a hostile `n` multiplies the cap.
      const other = yield* gw.mintToken({ workspace: "other", conversationId: "c", expiresAt: HOUR })
      const o = Redacted.value(other.token)
      const uncapped = yield* burst(20, () => up.hits.length, () => call(target, { path: "/v1/chat/completions", token: o, body: ask() }))
      assert.strictEqual(up.hits.length, 6)
      release()
      assert.strictEqual((yield* Effect.forEach(uncapped, Fiber.join)).filter((r) => r.status === 200).length, 1)
      const many = yield* call(target, { path: "/v1/chat/completions", token: o, body: ask({ max_tokens: 1_000, n: 8 }) })
      assert.strictEqual(many.status, 429)
    }))

  it.scoped("a turn token's own budget holds under the same burst", () =>
    Effect.gen(function* () {
      const { up, release } = yield* holdingUpstream(1_000)
      const gw = yield* startGateway([provider({ name: "p", baseUrl: up.url, models: ["m"] })], { limits: { inFlightPerToken: 64 } })
      const { token } = yield* gw.mintToken({ workspace: "free", conversationId: "c", expiresAt: HOUR, tokenBudget: 2_500 })
      const t = Redacted.value(token)
      const fibers = yield* burst(20, () => up.hits.length, () =>
        call({ socketPath: gw.socketPath! }, { path: "/v1/messages", token: t, header: "x-api-key", body: ask({ max_tokens: 1_000 }) }))
      assert.strictEqual(up.hits.length, 2)
      release()
      const replies = yield* Effect.forEach(fibers, Fiber.join)
      assert.strictEqual(replies.filter((r) => r.status === 200).length, 2)
      const refusal = JSON.parse(replies.find((r) => r.status === 429)!.body)
      assert.strictEqual(refusal.type, "error")
      assert.strictEqual(refusal.error.type, "budget_exceeded")
    }))

  it.scoped("every way a request ends settles its reservation; spend the gateway could not read is charged as reserved", () =>
    Effect.gen(function* () {
      const streams: Array<http.ServerResponse> = []
      const up = yield* scriptedUpstream((hit, res) => {
        switch (hit.body.metadata?.mode) {
          case "ok":
            return json(res, 200, chatAnswer("m", { prompt_tokens: 3, completion_tokens: 7, total_tokens: 10 }))
          case "400":
            return json(res, 400, "{\"error\":{\"message\":\"bad\"}}")
          case "500":
            return json(res, 500, "{\"error\":{\"message\":\"boom\"}}")
          case "drop":
            res.writeHead(200, { "content-type": "text/event-stream" })
            res.write("data: {\"choices\":[{\"delta\":{\"content\":\"par\"}}]}\n\n")
            return void setImmediate(() => res.socket?.destroy())
          case "stream":
            res.writeHead(200, { "content-type": "text/event-stream" })
            res.write("data: {\"choices\":[{\"delta\":{\"content\":\"one\"}}]}\n\n")
            return void streams.push(res)
          case "silent":
            return
        }
      })
      const gw = yield* startGateway([provider({ name: "p", baseUrl: up.url, models: ["m"] })], {
        budgets: { dailyTokens: 1_000_000 },
        retry: { attempts: 1 }
      })
      const events = yield* gw.subscribe
      const target = { socketPath: gw.socketPath! }
      const reserved = () => (gw.status.pipe(Effect.map((s) => s.usageToday.main?.reserved ?? 0)))
      const settled = (label: string) =>
        Effect.gen(function* () {
          const usage = yield* eventually(usageEvents(events).pipe(Effect.map((taken) => taken.length > 0 ? taken : undefined)), { label: `${label}: a usage event` })
          assert.strictEqual(usage.length, 1, label)
          assert.strictEqual(yield* reserved(), 0, `${label}: nothing stays reserved`)
          return usage[0]!
        })
      const minted = yield* gw.mintToken({ workspace: "main", conversationId: "c", expiresAt: HOUR })
      const t = Redacted.value(minted.token)
      const send = (mode: string, extra: object = {}, opts: { token?: string; onChunk?: () => void } = {}) =>
        call(target, {
          path: "/v1/chat/completions",
          token: opts.token ?? t,
          body: ask({ max_tokens: 2_000, metadata: { mode }, ...extra }),
          ...(opts.onChunk ? { onChunk: opts.onChunk } : {})
        })

      assert.strictEqual((yield* send("ok")).status, 200)
      assert.deepInclude(yield* settled("answer"), { totalTokens: 10, estimated: false })
      assert.strictEqual((yield* send("400")).status, 400)
      assert.deepInclude(yield* settled("error passed through"), { totalTokens: 0, estimated: false })
      assert.strictEqual((yield* send("500")).status, 500)
      assert.deepInclude(yield* settled("error after retries"), { totalTokens: 0, estimated: false })

      // A stream cut before its usage came: the tokens are not free, the reservation is charged.
      assert.include((yield* send("drop", { stream: true })).body, "stream_interrupted")
      const dropped = yield* settled("dropped stream")
      assert.strictEqual(dropped.outcome, "dropped")
      assert.isTrue(dropped.estimated)
      assert.isAbove(dropped.totalTokens, 2_000)

      // The client leaves while the upstream works on the answer.
      const hitsBefore = up.hits.length
      const leaving = yield* Effect.fork(send("silent"))
      yield* up.awaitHits(hitsBefore + 1)
      yield* Fiber.interrupt(leaving)
      assert.deepInclude(yield* settled("client gone before the answer"), { outcome: "client_closed", estimated: true })

      // The token is revoked before any byte of the answer went out: the connection is cut unanswered.
      const early = yield* gw.mintToken({ workspace: "main", conversationId: "c", expiresAt: HOUR })
      const hitsBeforeEarly = up.hits.length
      const waiting = yield* Effect.fork(send("silent", {}, { token: Redacted.value(early.token) }).pipe(Effect.either))
      yield* up.awaitHits(hitsBeforeEarly + 1)
      yield* early.revoke
      assert.isTrue(Either.isLeft(yield* Fiber.join(waiting)), "no answer, the connection was cut")
      assert.deepInclude(yield* settled("token revoked before the answer"), { outcome: "client_closed", estimated: true })

      // The token is revoked mid-stream: only once the client holds the stream's first bytes (the
      // upstream having written them says nothing about whether the gateway relayed them yet).
      const firstChunk = yield* Deferred.make<void>()
      const streaming = yield* Effect.fork(send("stream", { stream: true }, { onChunk: () => Deferred.unsafeDone(firstChunk, Exit.void) }))
      yield* Deferred.await(firstChunk)
      yield* minted.revoke
      const cut = yield* Fiber.join(streaming)
      assert.strictEqual(cut.status, 200)
      assert.include(cut.body, "one")
      assert.notInclude(cut.body, "[DONE]")
      assert.strictEqual(streams.length, 1)
      assert.deepInclude(yield* settled("token revoked mid-stream"), { outcome: "client_closed", estimated: true })
      const status = yield* gw.status
      assert.strictEqual(status.usageToday.main!.reserved, 0)
    }))
})

describe("walls: caps on requests in flight and connections (finding 11)", () => {
  it.scoped("a token over its in-flight cap gets 429; slots come back when requests finish or are cut", () =>
    Effect.gen(function* () {
      const { up, held, release } = yield* holdingUpstream(10)
      const gw = yield* startGateway([provider({ name: "p", baseUrl: up.url, models: ["m"] })], { limits: { inFlightPerToken: 2 } })
      const target = { socketPath: gw.socketPath! }
      const { token } = yield* gw.mintToken({ workspace: "main", conversationId: "c", expiresAt: HOUR })
      const t = Redacted.value(token)
      const send = () => call(target, { path: "/v1/chat/completions", token: t, body: ask() })
      const a = yield* Effect.fork(send())
      const b = yield* Effect.fork(send())
      yield* up.awaitHits(2)
      const over = yield* send()
      assert.strictEqual(over.status, 429)
      assert.strictEqual(over.headers["retry-after"], "1")
      assert.deepInclude(JSON.parse(over.body).error, { type: "rate_limit_error" })
      assert.include(JSON.parse(over.body).error.message, "already has 2 requests in flight")
      // Another token is not held to this one's cap.
      const second = yield* gw.mintToken({ workspace: "main", conversationId: "d", expiresAt: HOUR })
      const c = yield* Effect.fork(call(target, { path: "/v1/chat/completions", token: Redacted.value(second.token), body: ask() }))
      yield* up.awaitHits(3)

      // A cut (the client leaves) gives its slot back: a request past the cap check (an unknown
      // model: 404, answered at once) gets through again.
      const unknownModel = call(target, { path: "/v1/chat/completions", token: t, body: { ...ask(), model: "zzz" } })
      assert.strictEqual((yield* unknownModel).status, 429)
      yield* Fiber.interrupt(a)
      yield* eventually(unknownModel.pipe(Effect.map((r) => (r.status === 429 ? undefined : r.status))), { label: "the cut request's slot came back" })
      assert.strictEqual(held.length, 3)
      release()
      assert.strictEqual((yield* Fiber.join(b)).status, 200)
      assert.strictEqual((yield* Fiber.join(c)).status, 200)
      // Finished requests gave theirs back: two fit again, a third does not.
      const [x, y] = [yield* Effect.fork(send()), yield* Effect.fork(send())]
      yield* up.awaitHits(5)
      assert.strictEqual((yield* send()).status, 429)
      release()
      assert.deepStrictEqual([(yield* Fiber.join(x)).status, (yield* Fiber.join(y)).status], [200, 200])
    }))

  it.scoped("connections over the cap, across the socket and TCP listeners, are closed at accept", () =>
    Effect.gen(function* () {
      const up = yield* scriptedUpstream((hit, res) => json(res, 200, chatAnswer(hit.body.model)))
      const gw = yield* startGateway([provider({ name: "p", baseUrl: up.url, models: ["m"] })], { listen: { port: 0 }, limits: { maxConnections: 2 } })
      const port = Number(new URL(gw.url!).port)
      const open = (how: "socket" | "tcp") =>
        Effect.async<net.Socket, Error>((resume) => {
          const s = how === "socket" ? net.connect(gw.socketPath!) : net.connect(port, "127.0.0.1")
          s.once("connect", () => resume(Effect.succeed(s)))
          s.once("error", (e) => resume(Effect.fail(e)))
        })
      /** One request on `s`: the status line, or "closed" when the gateway closed it unanswered. */
      const health = (s: net.Socket) =>
        Effect.async<string>((resume) => {
          let got = ""
          s.on("data", (d: Buffer) => {
            got += d.toString("latin1")
            if (got.includes("\r\n\r\n")) resume(Effect.succeed(got.slice(0, got.indexOf("\r\n"))))
          })
          s.once("close", () => resume(Effect.succeed(got === "" ? "closed" : got.slice(0, got.indexOf("\r\n")))))
          s.once("error", () => undefined)
          s.write("GET /health HTTP/1.1\r\nhost: x\r\n\r\n")
        })
      const a = yield* open("socket")
      const b = yield* open("tcp")
      yield* Effect.addFinalizer(() => Effect.sync(() => (a.destroy(), b.destroy())))
      assert.strictEqual(yield* health(a), "HTTP/1.1 200 OK")
      assert.strictEqual(yield* health(b), "HTTP/1.1 200 OK")
      for (const how of ["socket", "tcp"] as const) {
        const extra = yield* open(how).pipe(Effect.either)
        if (extra._tag === "Right") assert.strictEqual(yield* health(extra.right), "closed", `a third connection (${how})`)
      }
      // A closed connection frees its place.
      a.destroy()
      const c = yield* eventually(
        open("socket").pipe(Effect.flatMap(health), Effect.orElseSucceed(() => "closed"), Effect.map((s) => (s === "closed" ? undefined : s))),
        { label: "a place came free" }
      )
      assert.strictEqual(c, "HTTP/1.1 200 OK")
    }))
})

describe("walls: a key split across chunks never reaches the sandbox (finding 10)", () => {
  it.scoped("streamed, plain, passed-through error and buffered error answers, and a body cut inside a key", () =>
    Effect.gen(function* () {
      const key = `canary${crypto.randomBytes(16).toString("hex")}`
      const half = key.length >> 1
      const [head, rest] = [key.slice(0, half), key.slice(half)]
      // Answers in two writes, the second only once the client has the first: two chunks for sure.
      let next: () => void = () => undefined
      const up = yield* scriptedUpstream((hit, res) => {
        const mode = hit.body.metadata?.mode
        const two = (first: string, second: string) => {
          res.write(first)
          next = () => res.end(second)
        }
        switch (mode) {
          case "stream": {
            res.writeHead(200, { "content-type": "text/event-stream" })
            return two(`data: {"choices":[{"delta":{"content":"your key is ${head}`, `${rest}"}}]}\n\ndata: [DONE]\n\n`)
          }
          case "json":
          case "400": {
            const body = `{"error":{"message":"Incorrect API key provided: ${key}"}}`
            res.writeHead(mode === "json" ? 200 : 400, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
            const at = body.indexOf(key) + half
            return two(body.slice(0, at), body.slice(at))
          }
          case "401": {
            res.writeHead(401, { "content-type": "application/json" })
            res.write(`{"error":{"message":"Incorrect API key provided: ${head}`)
            return void setImmediate(() => res.end(`${rest}"}}`))
          }
          case "big": {
            // Larger than the error body the gateway keeps, with the key across the cut.
            res.writeHead(500, { "content-type": "text/plain" })
            return res.end("x ".repeat(32 * 1024 - 5) + key)
          }
          case "ends": {
            res.writeHead(200, { "content-type": "text/event-stream" })
            return two("data: {}\n\n", `data: ${head}`)
          }
        }
      })
      const keyFile = path.join(tempDir(), "key")
      fs.writeFileSync(keyFile, key)
      const gw = yield* startGateway([provider({ name: "p", baseUrl: up.url, apiKeyFile: keyFile, models: ["m"] })], { retry: { attempts: 1 } })
      const { token } = yield* gw.mintToken({ workspace: "main", conversationId: "c", expiresAt: HOUR })
      const send = (mode: string) =>
        call({ socketPath: gw.socketPath! }, {
          path: "/v1/chat/completions",
          token: Redacted.value(token),
          body: ask({ metadata: { mode }, stream: mode === "stream" || mode === "ends" }),
          onChunk: () => next()
        })
      for (const mode of ["stream", "json", "400", "401", "big", "ends"]) {
        next = () => undefined
        const reply = yield* send(mode)
        assert.notInclude(reply.body, key, mode)
        assert.notInclude(reply.body, head, `${mode}: not even the key's first half`)
        if (mode === "big") assert.notInclude(reply.body, key.slice(0, 10), "big: the key's start, left by the cut")
        if (mode === "json" || mode === "400") {
          assert.strictEqual(Buffer.byteLength(reply.body), Number(reply.headers["content-length"]), `${mode}: Content-Length still right`)
          assert.include(reply.body, "*".repeat(key.length))
        }
        if (mode === "stream") {
          assert.isAbove(reply.chunks.length, 1, "the stream arrived in pieces")
          assert.include(reply.body, "[DONE]")
        }
      }
    }))
})

describe("walls: connections held by one client leave room for the others (issue 34, finding 2)", () => {
  type Target = { readonly path: string } | { readonly port: number }
  const open = (target: Target) =>
    Effect.async<net.Socket, Error>((resume) => {
      const s = "path" in target ? net.connect(target.path) : net.connect(target.port, "127.0.0.1")
      s.once("connect", () => resume(Effect.succeed(s)))
      s.once("error", (e) => resume(Effect.fail(e)))
    })
  /** Opens `n` connections and keeps them until the scope closes. */
  const hold = (target: Target, n: number) =>
    Effect.acquireRelease(Effect.forEach(Array.from({ length: n }), () => open(target)), (all) => Effect.sync(() => all.forEach((s) => s.destroy())))
  /** One request on `s`: its status line, or "closed" when the gateway closed it unanswered. */
  const ask1 = (s: net.Socket, request: string) =>
    Effect.async<string>((resume) => {
      let got = ""
      const line = () => got.slice(0, got.indexOf("\r\n"))
      const onData = (d: Buffer) => {
        got += d.toString("latin1")
        if (got.includes("\r\n\r\n")) {
          s.off("data", onData)
          resume(Effect.succeed(line()))
        }
      }
      s.on("data", onData)
      s.once("close", () => resume(Effect.succeed(got === "" ? "closed" : line())))
      s.once("error", () => undefined)
      s.write(request)
    })
  const health = "GET /health HTTP/1.1\r\nhost: x\r\n\r\n"
  const models = (token: string) => `GET /v1/models HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${token}\r\n\r\n`
  const closed = (s: net.Socket) => Effect.async<void>((resume) => (s.destroyed ? resume(Effect.void) : void s.once("close", () => resume(Effect.void))))

  it.scoped("a full sandbox socket leaves other sandboxes' sockets and the shared listeners their connections", () =>
    Effect.gen(function* () {
      const up = yield* scriptedUpstream((hit, res) => json(res, 200, chatAnswer(hit.body.model)))
      const gw = yield* startGateway([provider({ name: "p", baseUrl: up.url, models: ["m"] })], { listen: { port: 0 }, limits: { maxConnections: 4, connectionsPerSandbox: 3 } })
      const dir = tempDir()
      const [a, b] = [path.join(dir, "a.sock"), path.join(dir, "b.sock")]
      yield* gw.listenForSandbox(a)
      yield* gw.listenForSandbox(b)
      assert.strictEqual(fs.statSync(a).mode & 0o777, 0o600)
      const hog = yield* hold({ path: a }, 3)
      for (const s of hog) assert.strictEqual(yield* ask1(s, health), "HTTP/1.1 200 OK")
      // Sandbox a is full: its next connection is closed unanswered.
      assert.strictEqual(yield* ask1((yield* hold({ path: a }, 1))[0]!, health), "closed")
      // Sandbox b, the shared socket and TCP each still have all of theirs.
      for (const s of yield* hold({ path: b }, 3)) assert.strictEqual(yield* ask1(s, health), "HTTP/1.1 200 OK")
      for (const s of yield* hold({ path: gw.socketPath! }, 2)) assert.strictEqual(yield* ask1(s, health), "HTTP/1.1 200 OK")
      for (const s of yield* hold({ port: Number(new URL(gw.url!).port) }, 2)) assert.strictEqual(yield* ask1(s, health), "HTTP/1.1 200 OK")
    }))

  it.scoped("a token's requests on more connections than connectionsPerToken get 429 and are closed; another token is not counted with it", () =>
    Effect.gen(function* () {
      const up = yield* scriptedUpstream((hit, res) => json(res, 200, chatAnswer(hit.body.model)))
      const gw = yield* startGateway([provider({ name: "p", baseUrl: up.url, models: ["m"] })], { limits: { connectionsPerToken: 2, inFlightPerToken: 1 } })
      const mint = gw.mintToken({ workspace: "main", conversationId: "c", expiresAt: HOUR }).pipe(Effect.map((m) => Redacted.value(m.token)))
      const [t, u] = [yield* mint, yield* mint]
      const target = { path: gw.socketPath! }
      const [c1, c2, c3] = yield* hold(target, 3)
      assert.strictEqual(yield* ask1(c1!, models(t)), "HTTP/1.1 200 OK")
      assert.strictEqual(yield* ask1(c2!, models(t)), "HTTP/1.1 200 OK")
      // The same connections carry the token again as often as it likes.
      assert.strictEqual(yield* ask1(c1!, models(t)), "HTTP/1.1 200 OK")
      assert.strictEqual(yield* ask1(c3!, models(t)), "HTTP/1.1 429 Too Many Requests")
      yield* closed(c3!)
      // Another token is counted on its own.
      const [d1] = yield* hold(target, 1)
      assert.strictEqual(yield* ask1(d1!, models(u)), "HTTP/1.1 200 OK")
      // A connection the token gave up frees its place.
      c2!.destroy()
      const [c4] = yield* hold(target, 1)
      assert.strictEqual(yield* eventually(ask1(c4!, models(t)).pipe(Effect.map((l) => (l === "HTTP/1.1 200 OK" ? l : undefined))), { label: "a place came free" }), "HTTP/1.1 200 OK")
    }))

  it.scoped("a silent TCP connection gets 408 and is closed after headersTimeoutMs; an idle one after idleTimeoutMs", () =>
    Effect.gen(function* () {
      const up = yield* scriptedUpstream((hit, res) => json(res, 200, chatAnswer(hit.body.model)))
      const gw = yield* startGateway([provider({ name: "p", baseUrl: up.url, models: ["m"] })], { listen: { port: 0 }, limits: { headersTimeoutMs: 300, idleTimeoutMs: 300 } })
      const [silent, idle] = yield* hold({ port: Number(new URL(gw.url!).port) }, 2)
      let heard = ""
      silent!.on("data", (d: Buffer) => (heard += d.toString("latin1")))
      assert.strictEqual(yield* ask1(idle!, health), "HTTP/1.1 200 OK")
      yield* closed(silent!)
      yield* closed(idle!)
      assert.match(heard, /^HTTP\/1\.1 408 /)
    }))
})

describe("walls: a short key is not masked in ordinary words (issue 43, item 8)", () => {
  it.scoped("a 1-character key leaves a reply 'ok' whole; an 8-character key is still masked", () =>
    Effect.gen(function* () {
      const up = yield* scriptedUpstream((hit, res) =>
        json(res, 200, JSON.stringify({
          id: "chatcmpl-1", object: "chat.completion", model: hit.body.model,
          choices: [{ index: 0, message: { role: "assistant", content: `ok, ${hit.body.model === "long" ? "key12345" : "fine"}` }, finish_reason: "stop" }],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 }
        })))
      const dir = tempDir()
      const keyFile = (name: string, key: string) => {
        const file = path.join(dir, name)
        fs.writeFileSync(file, key)
        return file
      }
      const gw = yield* startGateway([
        provider({ name: "short", baseUrl: up.url, apiKeyFile: keyFile("short", "k"), models: ["m"] }),
        provider({ name: "eight", baseUrl: up.url, apiKeyFile: keyFile("eight", "key12345"), models: ["long"] })
      ], { retry: { attempts: 1 } })
      const { token } = yield* gw.mintToken({ workspace: "main", conversationId: "c", expiresAt: HOUR })
      const send = (model: string) => call({ socketPath: gw.socketPath! }, { path: "/v1/chat/completions", token: Redacted.value(token), body: ask({ model }) })
      const short = JSON.parse((yield* send("m")).body)
      assert.strictEqual(short.choices[0].message.content, "ok, fine")
      const long = JSON.parse((yield* send("long")).body)
      assert.strictEqual(long.choices[0].message.content, "ok, ********")
    }))
})
