/**
 * The canary: provider keys that upstreams echo back everywhere they can (answers, streams, error
 * bodies, mid-stream drops), traffic through every endpoint and error path, and the keys appear in
 * no log line, event, status, error or response.
 */
import { assert, describe, it } from "@effect/vitest"
import { Chunk, ConfigProvider, Effect, Layer, Logger, LogLevel, Queue, Redacted } from "effect"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { resolveCatalog } from "../../src/gateway/catalog.js"
import { GatewayConfig } from "../../src/config/gateway.js"
import { tempDir } from "../support/db.js"
import { call, capturingLogs, drivingClock, json, provider, type Reply, scriptedUpstream, startGateway } from "./support.js"

const envCanary = `sk-canary-${crypto.randomBytes(12).toString("hex")}`
const fileCanary = `canary${crypto.randomBytes(12).toString("hex")}`
const canaries = [envCanary, fileCanary]

/** Echoes the credential it got into whatever it answers, by the request's `mode`. */
const hostile = (hit: { headers: Record<string, unknown>; body: any }, res: import("node:http").ServerResponse) => {
  const cred = String(hit.headers.authorization ?? hit.headers["x-api-key"] ?? "")
  const mode = hit.body?.metadata?.mode ?? "ok"
  const echo = `Incorrect API key provided: ${cred}`
  switch (mode) {
    case "ok":
      return json(res, 200, JSON.stringify({ object: "chat.completion", choices: [{ message: { role: "assistant", content: echo } }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }), { "x-echo": cred.replace(/^Bearer /, "") })
    case "stream":
    case "drop":
      res.writeHead(200, { "content-type": "text/event-stream" })
      res.write(`data: ${JSON.stringify({ choices: [{ delta: { content: echo } }] })}\n\n`)
      if (mode === "drop") return void setImmediate(() => res.socket?.destroy())
      return res.end("data: [DONE]\n\n")
    case "401":
      return json(res, 401, JSON.stringify({ error: { message: echo, type: "invalid_request_error" } }))
    case "429":
      return json(res, 429, JSON.stringify({ error: { message: echo } }), { "retry-after": "600", "x-echo": cred.replace(/^Bearer /, "") })
    case "500":
      return json(res, 500, echo)
    case "silent":
      return
  }
}

describe("canary: provider keys never leave the gateway", () => {
  it.scoped("no log line, event, status, error or response carries a key, on any path", () => {
    const lines: Array<string> = []
    return Effect.gen(function* () {
      const up = yield* scriptedUpstream(hostile)
      const keyFile = path.join(tempDir(), "key")
      fs.writeFileSync(keyFile, fileCanary)
      const providers = [
        provider({ name: "openai", kind: "openai", baseUrl: up.url, apiKeyEnv: "CANARY_KEY", models: ["gpt"] }),
        provider({ name: "compat", baseUrl: up.url, apiKeyFile: keyFile, models: ["gpt"] }),
        provider({ name: "ant", kind: "anthropic", baseUrl: up.url, apiKeyEnv: "CANARY_KEY", models: ["claude"] })
      ]
      const gw = yield* startGateway(providers, { retry: { attempts: 2 }, timeouts: { headersMs: 1_000 } })
      const events = yield* gw.subscribe
      const { token } = yield* gw.mintToken({ workspace: "main", conversationId: "c", expiresAt: 3_600_000 })
      const t = Redacted.value(token)
      const target = { socketPath: gw.socketPath! }
      const chat = (mode: string, extra: object = {}) =>
        drivingClock(call(target, { path: "/v1/chat/completions", token: t, body: { model: "gpt", messages: [{ role: "user", content: "hi" }], metadata: { mode }, ...extra } }))
      const replies: Array<Reply> = []
      for (const mode of ["ok", "401", "500", "drop", "silent", "429"]) replies.push(yield* chat(mode))
      replies.push(yield* chat("stream", { stream: true }))
      replies.push(yield* chat("drop", { stream: true }))
      replies.push(yield* call(target, { path: "/v1/messages", token: t, header: "x-api-key", body: { model: "claude", max_tokens: 5, messages: [], metadata: { mode: "ok" } } }))
      replies.push(yield* drivingClock(call(target, { path: "/v1/messages", token: t, header: "x-api-key", body: { model: "claude", max_tokens: 5, messages: [], metadata: { mode: "500" } } })))
      replies.push(yield* call(target, { path: "/v1/responses", token: t, body: { model: "gpt", input: "hi", metadata: { mode: "ok" } } }))
      replies.push(yield* call(target, { path: "/v1/models", token: t }))
      replies.push(yield* call(target, { path: "/v1/chat/completions", token: envCanary, body: { model: "gpt" } }))
      replies.push(yield* call(target, { path: "/v1/chat/completions", token: t, body: "{broken" }))

      // The upstream did get the keys (so the canary really went through the gateway).
      const sent = JSON.stringify(up.hits.map((h) => h.headers))
      assert.include(sent, envCanary)
      assert.include(sent, fileCanary)
      assert.isTrue(replies.some((r) => r.status === 200) && replies.some((r) => r.status === 429) && replies.some((r) => r.status >= 500))

      const configError = yield* Effect.flip(resolveCatalog([provider({ name: "x", kind: "openai", baseUrl: up.url, apiKeyEnv: "NOT_SET_ANYWHERE" })], GatewayConfig.make({})))
      const seen = [
        ...replies.map((r) => `${JSON.stringify(r.headers)}\n${r.body}`),
        ...Chunk.toArray(yield* Queue.takeAll(events)).map((e) => JSON.stringify(e)),
        JSON.stringify(yield* gw.status),
        configError.message,
        ...lines
      ]
      assert.isAbove(lines.length, 0, "the gateway logged something")
      for (const canary of canaries) {
        const leaks = seen.filter((s) => s.includes(canary))
        assert.deepStrictEqual(leaks, [], `the canary ${canary.slice(0, 9)}... leaked`)
      }
    }).pipe(
      Effect.provide(Layer.mergeAll(capturingLogs(lines), Logger.minimumLogLevel(LogLevel.All))),
      Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["CANARY_KEY", envCanary]])))
    )
  })
})
