/**
 * What Claude Code sends the gateway (its base URL is the gateway socket, its key the turn token):
 * `POST /v1/messages?beta=true` with `anthropic-beta` and `anthropic-version` headers and the token
 * as `Authorization: Bearer` (ANTHROPIC_AUTH_TOKEN), streamed, a model group's name as the model,
 * and a `HEAD /` probe. The upstream gets the headers, the provider's key and the deployment's model.
 */
import { assert, describe, it } from "@effect/vitest"
import { Chunk, Effect, Queue, Redacted } from "effect"
import * as fs from "node:fs"
import type { UsageEvent } from "../../src/gateway/events.js"
import { call, provider, scriptedUpstream, startGateway } from "./support.js"
import { tempDir } from "../support/temp.js"

const HOUR = 3_600_000
const BETA = "claude-code-20250219,interleaved-thinking-2025-05-14"

describe("the gateway serves Claude Code's requests", () => {
  it.scoped("/v1/messages?beta=true with a bearer turn token, beta headers passed on, a group name mapped, streamed", () =>
    Effect.gen(function* () {
      const up = yield* scriptedUpstream((_hit, res) => {
        res.writeHead(200, { "content-type": "text/event-stream" })
        res.write("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\n\n")
        res.write("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n")
        res.end("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":6}}\n\n")
      })
      const keyFile = `${tempDir("pynchy-gw-key-")}/key`
      fs.writeFileSync(keyFile, "sk-ant-cc-wire-123456")
      const gw = yield* startGateway([provider({ name: "ant", kind: "anthropic", baseUrl: up.url, apiKeyFile: keyFile })], {
        modelGroups: [{ name: "coder", deployments: [{ provider: "ant", model: "claude-real-1" }] }]
      })
      const events = yield* gw.subscribe
      const { token } = yield* gw.mintToken({ workspace: "main", conversationId: "c", models: ["coder"], expiresAt: HOUR })
      const target = { socketPath: gw.socketPath! }

      const probe = yield* call(target, { method: "HEAD", path: "/" })
      assert.strictEqual(probe.status, 200)

      const reply = yield* call(target, {
        path: "/v1/messages?beta=true",
        token: Redacted.value(token),
        headers: { "anthropic-beta": BETA, "anthropic-version": "2023-06-01" },
        body: { model: "coder", max_tokens: 32, stream: true, messages: [{ role: "user", content: "hi" }] }
      })
      assert.strictEqual(reply.status, 200)
      assert.include(reply.headers["content-type"] ?? "", "text/event-stream")
      assert.include(reply.body, "text_delta")
      const hit = up.hits[0]!
      assert.strictEqual(hit.path, "/v1/messages")
      assert.strictEqual(hit.body.model, "claude-real-1")
      assert.strictEqual(hit.headers["anthropic-beta"], BETA)
      assert.strictEqual(hit.headers["anthropic-version"], "2023-06-01")
      assert.strictEqual(hit.headers["x-api-key"], "sk-ant-cc-wire-123456")
      assert.isUndefined(hit.headers.authorization)
      const usage = Chunk.toArray(yield* Queue.takeAll(events)).find((e): e is UsageEvent => e.type === "gateway.usage")!
      assert.deepInclude(usage, { api: "messages", model: "coder", deployment: "ant/claude-real-1", inputTokens: 9, outputTokens: 6 })

      // A model outside the turn's grant is refused before any upstream request.
      const other = yield* call(target, { path: "/v1/messages?beta=true", token: Redacted.value(token), body: { model: "claude-real-1", max_tokens: 8, messages: [] } })
      assert.strictEqual(other.status, 403)
      assert.strictEqual(up.hits.length, 1)
    }))
})
