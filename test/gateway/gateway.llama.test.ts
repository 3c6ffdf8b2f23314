/** The gateway in front of a real upstream: llama.cpp's llama-server from the sid root. */
import { assert, describe, it } from "@effect/vitest"
import { Chunk, Effect, Queue, Redacted } from "effect"
import type { UsageEvent } from "../../src/gateway/events.js"
import { skipWithoutSidRoot, startLlama } from "../support/llama.js"
import { call, provider, startGateway } from "./support.js"

const HOUR = 3_600_000

const setup = Effect.gen(function* () {
  const llama = yield* startLlama
  const gw = yield* startGateway([provider({ name: "llama", baseUrl: llama.baseUrl, models: ["tiny"] })])
  const events = yield* gw.subscribe
  const { token } = yield* gw.mintToken({ workspace: "main", conversationId: "terminal:a", expiresAt: HOUR })
  const usage = Queue.takeAll(events).pipe(
    Effect.map((c) => Chunk.toArray(c).filter((e): e is UsageEvent => e.type === "gateway.usage"))
  )
  return { gw, token: Redacted.value(token), target: { socketPath: gw.socketPath! }, usage }
})

const sseData = (body: string) =>
  body.split("\n").filter((l) => l.startsWith("data: ") && l !== "data: [DONE]").map((l) => JSON.parse(l.slice(6)))

describe.skipIf(skipWithoutSidRoot())("gateway against llama-server", () => {
  it.scoped("OpenAI chat completion: the answer and its usage", () =>
    Effect.gen(function* () {
      const { target, token, usage } = yield* setup
      const reply = yield* call(target, { path: "/v1/chat/completions", token, body: { model: "tiny", messages: [{ role: "user", content: "hello" }], max_tokens: 8 } })
      assert.strictEqual(reply.status, 200)
      const body = JSON.parse(reply.body)
      assert.strictEqual(body.object, "chat.completion")
      assert.isString(body.choices[0].message.content)
      const [event] = yield* usage
      assert.strictEqual(event!.inputTokens, body.usage.prompt_tokens)
      assert.strictEqual(event!.outputTokens, body.usage.completion_tokens)
      assert.strictEqual(event!.totalTokens, body.usage.total_tokens)
      assert.strictEqual(event!.outcome, "ok")
    }))

  it.scoped("OpenAI chat streaming: chunks pass through and the streamed usage is accounted", () =>
    Effect.gen(function* () {
      const { target, token, usage } = yield* setup
      const reply = yield* call(target, { path: "/v1/chat/completions", token, body: { model: "tiny", messages: [{ role: "user", content: "hello" }], max_tokens: 6, stream: true } })
      assert.strictEqual(reply.status, 200)
      assert.match(String(reply.headers["content-type"]), /^text\/event-stream/)
      assert.isTrue(reply.body.trimEnd().endsWith("data: [DONE]"))
      const chunks = sseData(reply.body)
      assert.isAbove(chunks.length, 2)
      const last = chunks[chunks.length - 1]
      assert.isObject(last.usage, "the gateway asked for usage (stream_options.include_usage)")
      const [event] = yield* usage
      assert.deepInclude(event!, { stream: true, outcome: "ok", outputTokens: last.usage.completion_tokens, totalTokens: last.usage.total_tokens })
      assert.isAbove(event!.totalTokens, 0)
    }))

  it.scoped("Anthropic messages, passed through to an upstream that serves them, plain and streamed", () =>
    Effect.gen(function* () {
      const { target, token, usage } = yield* setup
      const plain = yield* call(target, { path: "/v1/messages", token, header: "x-api-key", body: { model: "tiny", max_tokens: 8, messages: [{ role: "user", content: "hello" }] } })
      assert.strictEqual(plain.status, 200)
      const msg = JSON.parse(plain.body)
      assert.strictEqual(msg.type, "message")
      assert.strictEqual(msg.content[0].type, "text")
      const [first] = yield* usage
      assert.strictEqual(first!.outputTokens, msg.usage.output_tokens)
      assert.strictEqual(first!.totalTokens, msg.usage.input_tokens + msg.usage.output_tokens + (msg.usage.cache_read_input_tokens ?? 0))

      const streamed = yield* call(target, { path: "/v1/messages", token, header: "x-api-key", body: { model: "tiny", max_tokens: 5, stream: true, messages: [{ role: "user", content: "hello" }] } })
      assert.strictEqual(streamed.status, 200)
      const types = sseData(streamed.body).map((e) => e.type)
      // llama-server now and then leaves out message_start or the content blocks (noise weights):
      // the stream is passed on as it comes; its end is always there.
      assert.include(types, "message_delta")
      assert.strictEqual(types[types.length - 1], "message_stop")
      const delta = sseData(streamed.body).find((e) => e.type === "message_delta")
      const [second] = yield* usage
      assert.deepInclude(second!, { api: "messages", stream: true, outputTokens: delta.usage.output_tokens })
      assert.isAtLeast(second!.totalTokens, delta.usage.output_tokens)
    }))

  it.scoped("Responses API passes through; /v1/models lists the public names", () =>
    Effect.gen(function* () {
      const { target, token, usage } = yield* setup
      const reply = yield* call(target, { path: "/v1/responses", token, body: { model: "tiny", input: "hello", max_output_tokens: 4 } })
      assert.strictEqual(reply.status, 200)
      const body = JSON.parse(reply.body)
      assert.strictEqual(body.object, "response")
      const [event] = yield* usage
      assert.strictEqual(event!.totalTokens, body.usage.total_tokens)
      const models = JSON.parse((yield* call(target, { path: "/v1/models", token })).body)
      assert.deepStrictEqual(models.data.map((m: { id: string }) => m.id), ["tiny"])
    }))
})
