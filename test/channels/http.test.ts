/**
 * The HTTP API connection with real HTTP on 127.0.0.1, inside a test host (scripted core):
 * bearer auth, durable ingest before the 202, idempotency keys, replies, SSE, 400s naming fields.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Layer, Option } from "effect"
import { makeTestHost } from "../../layers/test.js"
import { type HttpRuntime, makeHttpRuntime } from "../../src/channels/http/HttpRuntime.js"
import { decodeHttpSettings, hashToken } from "../../src/channels/http/settings.js"
import { decodeConfig } from "../../src/config/HostConfig.js"
import { MessageStore } from "../../src/db/MessageStore.js"
import { MessageId } from "../../src/domain/ids.js"
import { tempDir } from "../support/db.js"

const TOKEN = "test-token-1"

const config = (dir: string) =>
  Either.getOrThrow(decodeConfig({
    dataDir: dir,
    workspaces: [{ id: "main", instructions: "test" }],
    routes: [{ connection: "web", place: "*", workspace: "main" }, { connection: "strict", place: "only", workspace: "main" }],
    connections: {}
  }, "test config"))

const runtimeFor = (name = "web") =>
  makeHttpRuntime({ name, settings: decodeHttpSettings(name, { kind: "http", port: 0, tokens: [hashToken(TOKEN)] }), dataDir: tempDir() })

const withHost = (runtime: HttpRuntime) =>
  Effect.gen(function* () {
    const ctx = yield* Layer.build(makeTestHost(config(tempDir()), { runtimes: [{ plugin: "http", value: runtime }] }))
    const base = `http://127.0.0.1:${runtime.port()}`
    return { ctx, base }
  })

const call = (url: string, init: RequestInit & { token?: string | null } = {}) =>
  Effect.promise(async () => {
    const { token = TOKEN, ...rest } = init
    const headers = new Headers(rest.headers)
    if (token !== null) headers.set("authorization", `Bearer ${token}`)
    const res = await fetch(url, { ...rest, headers })
    const text = await res.text()
    return { status: res.status, body: text === "" ? undefined : JSON.parse(text) }
  })

const post = (base: string, place: string, body: unknown, headers: Record<string, string> = {}) =>
  call(`${base}/v1/conversations/${encodeURIComponent(place)}/messages`, { method: "POST", body: typeof body === "string" ? body : JSON.stringify(body), headers: { "content-type": "application/json", ...headers } })

const awaitReplies = (base: string, place: string, n: number) =>
  Effect.gen(function* () {
    while (true) {
      const r = yield* call(`${base}/v1/conversations/${encodeURIComponent(place)}/replies?after=0`)
      if (r.body.replies.length >= n) return r.body.replies as Array<{ id: number; key: string; text: string }>
      yield* Effect.sleep("10 millis")
    }
  })

describe("HTTP API connection", () => {
  it.scopedLive("without a valid bearer token: 401 with no detail", () =>
    Effect.gen(function* () {
      const { base } = yield* withHost(runtimeFor())
      for (const token of [null, "wrong"]) {
        const r = yield* call(`${base}/v1/conversations/a/messages`, { method: "POST", body: "{}", token })
        assert.strictEqual(r.status, 401)
        assert.deepStrictEqual(r.body, { error: "unauthorized" })
      }
      const unknownPath = yield* call(`${base}/v1/elsewhere`, { token: "wrong" })
      assert.strictEqual(unknownPath.status, 401)
    }))

  it.scopedLive("a posted message is persisted before the 202; the idempotency key dedups a retry; the reply is readable", () =>
    Effect.gen(function* () {
      const { ctx, base } = yield* withHost(runtimeFor())
      const first = yield* post(base, "room 1", { text: "hello", sender: "me" }, { "idempotency-key": "k-1" })
      assert.strictEqual(first.status, 202)
      assert.isFalse(first.body.duplicate)
      assert.strictEqual(first.body.conversationId, "web:room 1")
      const stored = yield* Effect.flatMap(MessageStore, (s) => s.get(MessageId.make(first.body.messageId))).pipe(Effect.provide(ctx))
      assert.isTrue(Option.isSome(stored) && stored.value.text === "hello" && stored.value.sender === "me")
      const again = yield* post(base, "room 1", { text: "hello", sender: "me" }, { "idempotency-key": "k-1" })
      assert.deepStrictEqual([again.status, again.body.duplicate, again.body.messageId], [202, true, first.body.messageId])
      const replies = yield* awaitReplies(base, "room 1", 1)
      assert.deepStrictEqual(replies.map((r) => r.text), ["echo: hello"])
      const later = yield* call(`${base}/v1/conversations/room%201/replies?after=${replies[0]!.id}`)
      assert.deepStrictEqual(later.body.replies, [])
    }))

  it.scopedLive("the stream sends replies as server-sent events", () =>
    Effect.gen(function* () {
      const { base } = yield* withHost(runtimeFor())
      const events = yield* Effect.promise(async () => {
        const abort = new AbortController()
        const res = await fetch(`${base}/v1/conversations/s/stream`, { headers: { authorization: `Bearer ${TOKEN}` }, signal: abort.signal })
        assert.strictEqual(res.headers.get("content-type"), "text/event-stream")
        await fetch(`${base}/v1/conversations/s/messages`, { method: "POST", headers: { authorization: `Bearer ${TOKEN}` }, body: JSON.stringify({ text: "streamed" }) })
        const reader = res.body!.getReader()
        let text = ""
        while (!text.includes("event: reply")) {
          const { value, done } = await reader.read()
          if (done) break
          text += new TextDecoder().decode(value)
        }
        abort.abort()
        return text
      })
      const data = /event: reply\ndata: (.*)\n/.exec(events)
      assert.isNotNull(data)
      assert.strictEqual(JSON.parse(data![1]!).text, "echo: streamed")
      assert.match(events, /^retry: 1000\n\nid: \d+\n/)
    }))

  it.scopedLive("bad input gets a 400 naming the field; a place without a route a 404", () =>
    Effect.gen(function* () {
      const strict = runtimeFor("strict")
      const { base } = yield* withHost(strict)
      const pathsOf = (r: { body: { problems: Array<{ path: string }> } }) => r.body.problems.map((p) => p.path)
      const notJson = yield* post(base, "only", "{nope")
      assert.deepStrictEqual([notJson.status, pathsOf(notJson)], [400, ["body"]])
      const badText = yield* post(base, "only", { text: 5, extra: true })
      assert.strictEqual(badText.status, 400)
      assert.includeMembers(pathsOf(badText), ["body.text", "body.extra"])
      const missing = yield* post(base, "only", { sender: "" })
      assert.includeMembers(pathsOf(missing), ["body.text", "body.sender"])
      const badKey = yield* post(base, "only", { text: "x" }, { "idempotency-key": "x".repeat(201) })
      assert.deepStrictEqual([badKey.status, pathsOf(badKey)], [400, ["header.Idempotency-Key"]])
      const badAfter = yield* call(`${base}/v1/conversations/only/replies?after=-1`)
      assert.deepStrictEqual([badAfter.status, pathsOf(badAfter)], [400, ["query.after"]])
      const unrouted = yield* post(base, "elsewhere", { text: "x" })
      assert.deepStrictEqual([unrouted.status, unrouted.body.error, pathsOf(unrouted)], [404, "no_route", ["place"]])
    }))

  it("bad settings name the field", () => {
    assert.throws(() => decodeHttpSettings("web", { kind: "http", port: 70_000, tokens: ["plain-token"] }), /connections\.web: .*port.*tokens\.0/s)
    assert.throws(() => decodeHttpSettings("web", { kind: "http", port: 1 }), /connections\.web\.tokens/)
  })
})
