import { assert, describe, it } from "@effect/vitest"
import { Chunk, Effect, Fiber, Queue, Redacted, TestClock } from "effect"
import * as fs from "node:fs"
import { sandboxUser } from "../../src/system/sandbox-user.js"
import type { GatewayEvent, UsageEvent } from "../../src/gateway/events.js"
import { call, chatAnswer, json, provider, scriptedUpstream, startGateway } from "./support.js"
import { tempDir } from "../support/temp.js"

const ask = (model = "m") => ({ model, messages: [{ role: "user", content: "hi" }] })
const HOUR = 3_600_000

/** Drains what the subscription holds now. */
const drain = (q: Queue.Dequeue<GatewayEvent>) => Queue.takeAll(q).pipe(Effect.map(Chunk.toArray))

/** Lets real I/O run until the gateway sleeps on the TestClock until `deadline` (millis). */
const untilSleepUntil = (deadline: number) =>
  Effect.gen(function* () {
    for (let i = 0; i < 5_000; i++) {
      if (Chunk.toArray(yield* TestClock.sleeps()).includes(deadline)) return
      yield* Effect.promise(() => new Promise((r) => setImmediate(r)))
    }
    throw new Error(`the gateway never waited until ${deadline}`)
  })

describe("gateway data path (scripted upstream)", () => {
  it.scoped("forwards a chat completion with the provider key, the deployment's model id and no client credential", () =>
    Effect.gen(function* () {
      const up = yield* scriptedUpstream((hit, res) => json(res, 200, chatAnswer(hit.body.model)))
      const keyFile = `${tempDir("pynchy-gw-key-")}/key`
      fs.writeFileSync(keyFile, "sk-upstream-key-123456\n")
      const gw = yield* startGateway([provider({ name: "p", baseUrl: up.url, apiKeyFile: keyFile })], {
        modelGroups: [{ name: "smart", deployments: [{ provider: "p", model: "real-model" }] }]
      })
      const events = yield* gw.subscribe
      const { token } = yield* gw.mintToken({ workspace: "main", conversationId: "terminal:a", expiresAt: HOUR })
      const reply = yield* call({ socketPath: gw.socketPath! }, { path: "/v1/chat/completions", token: Redacted.value(token), body: ask("smart") })
      assert.strictEqual(reply.status, 200)
      assert.strictEqual(JSON.parse(reply.body).choices[0].message.content, "hello")
      assert.strictEqual(reply.headers["x-pynchy-deployment"], "p/real-model")
      const hit = up.hits[0]!
      assert.strictEqual(hit.path, "/v1/chat/completions")
      assert.strictEqual(hit.body.model, "real-model")
      assert.strictEqual(hit.headers.authorization, "Bearer sk-upstream-key-123456")
      assert.notInclude(JSON.stringify(hit.headers), Redacted.value(token))
      const usage = (yield* drain(events)).filter((e): e is UsageEvent => e.type === "gateway.usage")
      assert.strictEqual(usage.length, 1)
      assert.deepInclude(usage[0]!, { workspace: "main", conversationId: "terminal:a", model: "smart", deployment: "p/real-model", inputTokens: 11, outputTokens: 7, totalTokens: 18, outcome: "ok" })
    }))

  it.scoped("unknown, revoked and expired tokens all get the same bare 401", () =>
    Effect.gen(function* () {
      const up = yield* scriptedUpstream((hit, res) => json(res, 200, chatAnswer(hit.body.model)))
      const gw = yield* startGateway([provider({ name: "p", baseUrl: up.url, models: ["m"] })])
      const target = { socketPath: gw.socketPath! }
      const revoked = yield* gw.mintToken({ workspace: "main", conversationId: "c", expiresAt: HOUR })
      yield* revoked.revoke
      const expiring = yield* gw.mintToken({ workspace: "main", conversationId: "c", expiresAt: 1_000 })
      const before = yield* call(target, { path: "/v1/chat/completions", token: Redacted.value(expiring.token), body: ask() })
      assert.strictEqual(before.status, 200)
      yield* TestClock.adjust(1_000)
      const replies = [
        yield* call(target, { path: "/v1/chat/completions", body: ask() }),
        yield* call(target, { path: "/v1/chat/completions", token: "pgw_not-a-token", body: ask() }),
        yield* call(target, { path: "/v1/chat/completions", token: Redacted.value(revoked.token), body: ask() }),
        yield* call(target, { path: "/v1/messages", token: Redacted.value(expiring.token), header: "x-api-key", body: ask() }),
        yield* call(target, { path: "/v1/models", token: Redacted.value(expiring.token) })
      ]
      assert.deepStrictEqual(replies.map((r) => r.status), [401, 401, 401, 401, 401])
      for (const r of replies) assert.include(r.body, "\"unauthorized\"")
      assert.strictEqual(up.hits.length, 1)
      assert.strictEqual((yield* gw.status).activeTokens, 0)
    }))

  it.scoped("a token is held to its models; unknown models get 404; /v1/models lists what the token may use", () =>
    Effect.gen(function* () {
      const up = yield* scriptedUpstream((hit, res) => json(res, 200, chatAnswer(hit.body.model)))
      const gw = yield* startGateway([provider({ name: "p", baseUrl: up.url, models: ["a", "b"] })])
      const { token } = yield* gw.mintToken({ workspace: "main", conversationId: "c", models: ["a"], expiresAt: HOUR })
      const t = Redacted.value(token)
      const target = { socketPath: gw.socketPath! }
      assert.strictEqual((yield* call(target, { path: "/v1/chat/completions", token: t, body: ask("a") })).status, 200)
      const denied = yield* call(target, { path: "/v1/chat/completions", token: t, body: ask("b") })
      assert.strictEqual(denied.status, 403)
      assert.include(denied.body, "model 'b' is not allowed")
      const all = yield* gw.mintToken({ workspace: "main", conversationId: "c", expiresAt: HOUR })
      assert.strictEqual((yield* call(target, { path: "/v1/chat/completions", token: Redacted.value(all.token), body: ask("zzz") })).status, 404)
      const models = JSON.parse((yield* call(target, { path: "/v1/models", token: t })).body)
      assert.deepStrictEqual(models.data.map((m: { id: string }) => m.id), ["a"])
      const bad = yield* call(target, { path: "/v1/chat/completions", token: t, body: "{not json" })
      assert.strictEqual(bad.status, 400)
      assert.strictEqual(up.hits.length, 1)
    }))

  it.scoped("a 500 fails over to the next deployment; enough failures cool a deployment down, visible in status", () =>
    Effect.gen(function* () {
      const bad = yield* scriptedUpstream((_hit, res) => json(res, 500, "{\"error\":{\"message\":\"boom\"}}"))
      const good = yield* scriptedUpstream((hit, res) => json(res, 200, chatAnswer(hit.body.model)))
      const gw = yield* startGateway(
        [provider({ name: "bad", baseUrl: bad.url }), provider({ name: "good", baseUrl: good.url })],
        {
          modelGroups: [{ name: "m", deployments: [{ provider: "bad", model: "x", weight: 1_000_000 }, { provider: "good", model: "x", weight: 0.000001 }] }],
          cooldown: { allowedFails: 1, cooldownMs: 60_000 }
        }
      )
      const events = yield* gw.subscribe
      const { token } = yield* gw.mintToken({ workspace: "main", conversationId: "c", expiresAt: HOUR })
      const target = { socketPath: gw.socketPath! }
      for (let i = 0; i < 2; i++) {
        const r = yield* call(target, { path: "/v1/chat/completions", token: Redacted.value(token), body: ask("m") })
        assert.strictEqual(r.status, 200)
        assert.strictEqual(r.headers["x-pynchy-deployment"], "good/x")
      }
      assert.strictEqual(bad.hits.length, 2)
      const status = yield* gw.status
      const badStatus = status.deployments.find((d) => d.id === "bad/x")!
      assert.strictEqual(badStatus.cooldownReason, "failures")
      assert.strictEqual(badStatus.cooldownUntil, 60_000)
      assert.strictEqual(badStatus.failures, 2)
      // Cooling down: the next request goes straight to the good deployment.
      yield* call(target, { path: "/v1/chat/completions", token: Redacted.value(token), body: ask("m") })
      assert.strictEqual(bad.hits.length, 2)
      assert.isTrue((yield* drain(events)).some((e) => e.type === "gateway.cooldown" && e.deployment === "bad/x"))
    }))

  it.scoped("a 429 with Retry-After holds the deployment back that long: the sole deployment is retried only after it", () =>
    Effect.gen(function* () {
      const up = yield* scriptedUpstream((hit, res, n) =>
        n === 1 ? json(res, 429, "{\"error\":{\"message\":\"slow down\"}}", { "retry-after": "2" }) : json(res, 200, chatAnswer(hit.body.model))
      )
      const gw = yield* startGateway([provider({ name: "p", baseUrl: up.url, models: ["m"] })])
      const { token } = yield* gw.mintToken({ workspace: "main", conversationId: "c", expiresAt: HOUR })
      const fiber = yield* Effect.fork(call({ socketPath: gw.socketPath! }, { path: "/v1/chat/completions", token: Redacted.value(token), body: ask() }))
      yield* untilSleepUntil(2_000)
      const cooling = (yield* gw.status).deployments[0]!
      assert.strictEqual(cooling.cooldownReason, "retry-after")
      assert.strictEqual(cooling.cooldownUntil, 2_000)
      yield* TestClock.adjust(1_999)
      assert.strictEqual(up.hits.length, 1)
      yield* TestClock.adjust(1)
      const reply = yield* Fiber.join(fiber)
      assert.strictEqual(reply.status, 200)
      assert.strictEqual(up.hits.length, 2)
    }))

  it.scoped("a 429 whose Retry-After is longer than the gateway waits goes back to the client, Retry-After included", () =>
    Effect.gen(function* () {
      const up = yield* scriptedUpstream((_hit, res) => json(res, 429, "{\"error\":{\"message\":\"quota\"}}", { "retry-after": "120" }))
      const gw = yield* startGateway([provider({ name: "p", baseUrl: up.url, models: ["m"] })])
      const { token } = yield* gw.mintToken({ workspace: "main", conversationId: "c", expiresAt: HOUR })
      const reply = yield* call({ socketPath: gw.socketPath! }, { path: "/v1/chat/completions", token: Redacted.value(token), body: ask() })
      assert.strictEqual(reply.status, 429)
      assert.strictEqual(reply.headers["retry-after"], "120")
      assert.include(reply.body, "quota")
      assert.strictEqual(up.hits.length, 1)
      // Still cooling: the next request is refused without reaching the upstream.
      const next = yield* call({ socketPath: gw.socketPath! }, { path: "/v1/chat/completions", token: Redacted.value(token), body: ask() })
      assert.strictEqual(next.status, 503)
      assert.strictEqual(next.headers["retry-after"], "120")
      assert.strictEqual(up.hits.length, 1)
    }))

  it.scoped("an upstream that never answers times out (TestClock) and the next deployment answers", () =>
    Effect.gen(function* () {
      const silent = yield* scriptedUpstream(() => undefined)
      const good = yield* scriptedUpstream((hit, res) => json(res, 200, chatAnswer(hit.body.model)))
      const gw = yield* startGateway(
        [provider({ name: "silent", baseUrl: silent.url }), provider({ name: "good", baseUrl: good.url })],
        {
          modelGroups: [{ name: "m", deployments: [{ provider: "silent", model: "x", weight: 1_000_000 }, { provider: "good", model: "x", weight: 0.000001 }] }],
          timeouts: { headersMs: 5_000 }
        }
      )
      const { token } = yield* gw.mintToken({ workspace: "main", conversationId: "c", expiresAt: HOUR })
      const fiber = yield* Effect.fork(call({ socketPath: gw.socketPath! }, { path: "/v1/chat/completions", token: Redacted.value(token), body: ask() }))
      yield* silent.awaitHits(1)
      yield* untilSleepUntil(5_000)
      yield* TestClock.adjust(5_000)
      const reply = yield* Fiber.join(fiber)
      assert.strictEqual(reply.status, 200)
      assert.strictEqual(reply.headers["x-pynchy-deployment"], "good/x")
    }))

  it.scoped("with every attempt timing out the client gets a 504; an unreachable upstream gives 502", () =>
    Effect.gen(function* () {
      const silent = yield* scriptedUpstream(() => undefined)
      const gw = yield* startGateway([provider({ name: "s", baseUrl: silent.url, models: ["m"] }), provider({ name: "gone", baseUrl: "http://127.0.0.1:9/v1", models: ["g"] })], {
        retry: { attempts: 1 },
        timeouts: { headersMs: 1_000 }
      })
      const { token } = yield* gw.mintToken({ workspace: "main", conversationId: "c", expiresAt: HOUR })
      const fiber = yield* Effect.fork(call({ socketPath: gw.socketPath! }, { path: "/v1/chat/completions", token: Redacted.value(token), body: ask() }))
      yield* untilSleepUntil(1_000)
      yield* TestClock.adjust(1_000)
      const reply = yield* Fiber.join(fiber)
      assert.strictEqual(reply.status, 504)
      const gone = yield* call({ socketPath: gw.socketPath! }, { path: "/v1/chat/completions", token: Redacted.value(token), body: ask("g") })
      assert.strictEqual(gone.status, 502)
    }))

  it.scoped("streams pass chunk by chunk: the client has the first event before the upstream writes the second", () =>
    Effect.gen(function* () {
      let release: () => void = () => undefined
      const up = yield* scriptedUpstream((_hit, res) => {
        res.writeHead(200, { "content-type": "text/event-stream" })
        res.write("data: {\"choices\":[{\"delta\":{\"content\":\"one\"}}]}\n\n")
        release = () => {
          res.write("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2,\"total_tokens\":7}}\n\n")
          res.end("data: [DONE]\n\n")
        }
      })
      const gw = yield* startGateway([provider({ name: "p", baseUrl: up.url, models: ["m"] })])
      const events = yield* gw.subscribe
      const { token } = yield* gw.mintToken({ workspace: "main", conversationId: "c", expiresAt: HOUR })
      const seen: Array<string> = []
      const reply = yield* call({ socketPath: gw.socketPath! }, {
        path: "/v1/chat/completions",
        token: Redacted.value(token),
        body: { ...ask(), stream: true },
        onChunk: (c) => {
          seen.push(c)
          if (seen.length === 1) release()
        }
      })
      assert.strictEqual(reply.status, 200)
      assert.include(seen[0]!, "one")
      assert.notInclude(seen[0]!, "usage")
      assert.include(reply.body, "[DONE]")
      assert.deepStrictEqual(up.hits[0]!.body.stream_options, { include_usage: true })
      const usage = (yield* drain(events)).find((e): e is UsageEvent => e.type === "gateway.usage")!
      assert.deepInclude(usage, { stream: true, inputTokens: 5, outputTokens: 2, totalTokens: 7, outcome: "ok" })
    }))

  it.scoped("a connection dropped mid-stream ends the client stream with an error event and is not retried", () =>
    Effect.gen(function* () {
      const up = yield* scriptedUpstream((_hit, res) => {
        res.writeHead(200, { "content-type": "text/event-stream" })
        res.write("data: {\"choices\":[{\"delta\":{\"content\":\"par\"}}]}\n\n")
        setImmediate(() => res.socket?.destroy())
      })
      const other = yield* scriptedUpstream((hit, res) => json(res, 200, chatAnswer(hit.body.model)))
      const gw = yield* startGateway([provider({ name: "p", baseUrl: up.url }), provider({ name: "q", baseUrl: other.url })], {
        modelGroups: [{ name: "m", deployments: [{ provider: "p", model: "x", weight: 1_000_000 }, { provider: "q", model: "x", weight: 0.000001 }] }]
      })
      const events = yield* gw.subscribe
      const { token } = yield* gw.mintToken({ workspace: "main", conversationId: "c", expiresAt: HOUR })
      const reply = yield* call({ socketPath: gw.socketPath! }, { path: "/v1/chat/completions", token: Redacted.value(token), body: { ...ask(), stream: true } })
      assert.strictEqual(reply.status, 200)
      assert.include(reply.body, "par")
      assert.include(reply.body, "stream_interrupted")
      assert.strictEqual(other.hits.length, 0)
      const usage = (yield* drain(events)).find((e): e is UsageEvent => e.type === "gateway.usage")!
      assert.strictEqual(usage.outcome, "dropped")
    }))

  it.scoped("falls back to the next model group when the group's deployments all fail", () =>
    Effect.gen(function* () {
      const bad = yield* scriptedUpstream((_hit, res) => json(res, 503, "{}"))
      const good = yield* scriptedUpstream((hit, res) => json(res, 200, chatAnswer(hit.body.model)))
      const gw = yield* startGateway([provider({ name: "bad", baseUrl: bad.url }), provider({ name: "good", baseUrl: good.url })], {
        modelGroups: [
          { name: "big", deployments: [{ provider: "bad", model: "big-1" }], fallbacks: ["small"] },
          { name: "small", deployments: [{ provider: "good", model: "small-1" }] }
        ]
      })
      const { token } = yield* gw.mintToken({ workspace: "main", conversationId: "c", expiresAt: HOUR })
      const reply = yield* call({ socketPath: gw.socketPath! }, { path: "/v1/chat/completions", token: Redacted.value(token), body: ask("big") })
      assert.strictEqual(reply.status, 200)
      assert.strictEqual(good.hits[0]!.body.model, "small-1")
    }))

  it.scoped("the workspace's daily budget and the turn's own budget answer 429 with a clear message and an event", () =>
    Effect.gen(function* () {
      const up = yield* scriptedUpstream((hit, res) => json(res, 200, chatAnswer(hit.body.model, { prompt_tokens: 60, completion_tokens: 40, total_tokens: 100 })))
      const gw = yield* startGateway([provider({ name: "p", baseUrl: up.url, models: ["m"] })], {
        budgets: { dailyTokens: 1_000, workspaces: { small: 150 } }
      })
      const events = yield* gw.subscribe
      // A small cap, so each request's reservation (cap + input estimate) fits the small budgets.
      const capped = { ...ask(), max_tokens: 30 }
      const target = { socketPath: gw.socketPath! }
      const ws = yield* gw.mintToken({ workspace: "small", conversationId: "c", expiresAt: HOUR })
      assert.strictEqual((yield* call(target, { path: "/v1/chat/completions", token: Redacted.value(ws.token), body: capped })).status, 200)
      assert.strictEqual((yield* call(target, { path: "/v1/chat/completions", token: Redacted.value(ws.token), body: capped })).status, 200)
      const over = yield* call(target, { path: "/v1/chat/completions", token: Redacted.value(ws.token), body: capped })
      assert.strictEqual(over.status, 429)
      assert.include(JSON.parse(over.body).error.message, "workspace 'small' has used its daily token budget (200 of 150 tokens)")
      // The next UTC day starts afresh.
      yield* TestClock.adjust(86_400_000)
      const tomorrow = yield* gw.mintToken({ workspace: "small", conversationId: "c", expiresAt: 2 * 86_400_000 })
      assert.strictEqual((yield* call(target, { path: "/v1/chat/completions", token: Redacted.value(tomorrow.token), body: capped })).status, 200)

      const turn = yield* gw.mintToken({ workspace: "main", conversationId: "d", expiresAt: 2 * 86_400_000, tokenBudget: 50 })
      assert.strictEqual((yield* call(target, { path: "/v1/messages", token: Redacted.value(turn.token), header: "x-api-key", body: capped })).status, 200)
      const spent = yield* call(target, { path: "/v1/messages", token: Redacted.value(turn.token), header: "x-api-key", body: capped })
      assert.strictEqual(spent.status, 429)
      assert.strictEqual(JSON.parse(spent.body).type, "error")
      assert.include(JSON.parse(spent.body).error.message, "this turn has used its token budget")
      const budgetEvents = (yield* drain(events)).filter((e) => e.type === "gateway.budget_exceeded")
      assert.deepStrictEqual(budgetEvents.map((e) => e.type === "gateway.budget_exceeded" && e.scope), ["workspace-daily", "turn"])
      const status = yield* gw.status
      assert.deepStrictEqual(status.usageToday.small, { used: 100, reserved: 0, limit: 150 })
    }))

  it.scoped("revoking a token cuts the request it has in flight", () =>
    Effect.gen(function* () {
      const up = yield* scriptedUpstream((_hit, res) => {
        res.writeHead(200, { "content-type": "text/event-stream" })
        res.write("data: {}\n\n")
      })
      const gw = yield* startGateway([provider({ name: "p", baseUrl: up.url, models: ["m"] })])
      const minted = yield* gw.mintToken({ workspace: "main", conversationId: "c", expiresAt: HOUR })
      let first: () => void = () => undefined
      const gotFirst = new Promise<void>((r) => (first = r))
      const fiber = yield* Effect.fork(call({ socketPath: gw.socketPath! }, {
        path: "/v1/chat/completions",
        token: Redacted.value(minted.token),
        body: { ...ask(), stream: true },
        onChunk: () => first()
      }))
      yield* Effect.promise(() => gotFirst)
      assert.strictEqual((yield* gw.status).deployments[0]!.inFlight, 1)
      assert.isTrue(yield* gw.revoke(minted.token))
      const reply = yield* Fiber.join(fiber)
      assert.strictEqual(reply.body, "data: {}\n\n")
      assert.isFalse(yield* gw.revoke(minted.token))
      assert.strictEqual((yield* gw.status).deployments[0]!.inFlight, 0)
    }))

  it.scoped("a client that leaves before the answer cuts the upstream request and is not the deployment's failure", () =>
    Effect.gen(function* () {
      const silent = yield* scriptedUpstream(() => undefined)
      const gw = yield* startGateway([provider({ name: "p", baseUrl: silent.url, models: ["m"] })])
      const events = yield* gw.subscribe
      const { token } = yield* gw.mintToken({ workspace: "main", conversationId: "c", expiresAt: HOUR })
      const fiber = yield* Effect.fork(call({ socketPath: gw.socketPath! }, { path: "/v1/chat/completions", token: Redacted.value(token), body: ask() }))
      yield* silent.awaitHits(1)
      yield* Fiber.interrupt(fiber)
      let usage: UsageEvent | undefined
      for (let i = 0; i < 5_000 && usage === undefined; i++) {
        usage = (yield* drain(events)).find((e): e is UsageEvent => e.type === "gateway.usage")
        if (usage === undefined) yield* Effect.promise(() => new Promise((r) => setImmediate(r)))
      }
      assert.strictEqual(usage?.outcome, "client_closed")
      const d = (yield* gw.status).deployments[0]!
      assert.deepInclude(d, { inFlight: 0, failures: 0, consecutiveFails: 0 })
    }))

  it.scoped("an Anthropic provider gets /v1/messages with x-api-key and a version; usage comes from the message events", () =>
    Effect.gen(function* () {
      const up = yield* scriptedUpstream((_hit, res) => {
        res.writeHead(200, { "content-type": "text/event-stream" })
        res.write("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":9,\"cache_read_input_tokens\":4,\"output_tokens\":1}}}\n\n")
        res.write("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n")
        res.end("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":6}}\n\n")
      })
      const keyFile = `${tempDir("pynchy-gw-key-")}/key`
      fs.writeFileSync(keyFile, "sk-ant-test-abcdef")
      const gw = yield* startGateway([provider({ name: "ant", kind: "anthropic", baseUrl: up.url, apiKeyFile: keyFile, models: ["claude"] })])
      const events = yield* gw.subscribe
      const { token } = yield* gw.mintToken({ workspace: "main", conversationId: "c", expiresAt: HOUR })
      const reply = yield* call({ socketPath: gw.socketPath! }, { path: "/v1/messages", token: Redacted.value(token), header: "x-api-key", body: { ...ask("claude"), max_tokens: 8, stream: true } })
      assert.strictEqual(reply.status, 200)
      assert.include(reply.body, "message_delta")
      assert.strictEqual(up.hits[0]!.headers["x-api-key"], "sk-ant-test-abcdef")
      assert.strictEqual(up.hits[0]!.headers["anthropic-version"], "2023-06-01")
      assert.isUndefined(up.hits[0]!.headers.authorization)
      const usage = (yield* drain(events)).find((e): e is UsageEvent => e.type === "gateway.usage")!
      assert.deepInclude(usage, { api: "messages", inputTokens: 9, outputTokens: 6, cacheReadTokens: 4, totalTokens: 19 })
      // The Responses API is not Anthropic's: the gateway says so instead of guessing.
      const resp = yield* call({ socketPath: gw.socketPath! }, { path: "/v1/responses", token: Redacted.value(token), body: { model: "claude", input: "hi" } })
      assert.strictEqual(resp.status, 400)
    }))

  it.scoped("listens on 127.0.0.1 when a port is set, and removes its socket when the scope closes", () =>
    Effect.gen(function* () {
      const up = yield* scriptedUpstream((hit, res) => json(res, 200, chatAnswer(hit.body.model)))
      const socketPath = yield* Effect.scoped(
        Effect.gen(function* () {
          const gw = yield* startGateway([provider({ name: "p", baseUrl: up.url, models: ["m"] })], { listen: { port: 0 } })
          const { token } = yield* gw.mintToken({ workspace: "main", conversationId: "c", expiresAt: HOUR })
          assert.match(gw.url!, /^http:\/\/127\.0\.0\.1:\d+$/)
          assert.strictEqual((yield* call({ url: gw.url! }, { path: "/v1/chat/completions", token: Redacted.value(token), body: ask() })).status, 200)
          // The shared socket is the host's alone: sandboxes get sockets of their own, so not even
          // the sandbox user's group is let in.
          const stat = fs.statSync(gw.socketPath!)
          const sandbox = sandboxUser()
          assert.strictEqual(stat.mode & 0o777, 0o600)
          if (sandbox !== undefined) assert.notStrictEqual(stat.gid, sandbox.gid)
          return gw.socketPath!
        })
      )
      assert.isFalse(fs.existsSync(socketPath))
    }))
})
