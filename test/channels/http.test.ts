/**
 * The HTTP API connection with real HTTP on 127.0.0.1, inside a test host (scripted core):
 * bearer auth, durable ingest before the 202, idempotency keys, replies, SSE, 400s naming fields.
 */
import { SqlClient } from "@effect/sql"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Layer, Option } from "effect"
import { makeTestHost } from "../../layers/test.js"
import { type HttpRuntime, makeHttpRuntime } from "../../src/channels/http/HttpRuntime.js"
import { decodeHttpSettings, hashToken } from "../../src/channels/http/settings.js"
import { decodeConfig } from "../../src/config/HostConfig.js"
import { MessageStore } from "../../src/db/MessageStore.js"
import { ConversationId, MessageId } from "../../src/domain/ids.js"
import { tempDir } from "../support/db.js"
import { streamingExecutor } from "../support/streaming.js"
import { eventually } from "../support/eventually.js"
import * as net from "node:net"

const TOKEN = "test-token-1"
const TOKEN_B = "test-token-2"

const config = (dir: string) =>
  Either.getOrThrow(decodeConfig({
    dataDir: dir,
    workspaces: [{ id: "main", instructions: "test" }],
    routes: [{ connection: "web", place: "*", workspace: "main" }, { connection: "strict", place: "only", workspace: "main" }],
    connections: {}
  }, "test config"))

// The places both tokens write to are shared (every other place is its first writer's: http-owners.test.ts).
const runtimeFor = (name = "web") =>
  makeHttpRuntime({ name, settings: decodeHttpSettings(name, { kind: "http", port: 0, tokens: [{ hash: hashToken(TOKEN), name: "me" }, hashToken(TOKEN_B)], sharedPlaces: ["a", "b", "shared"] }), dataDir: tempDir() })

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

const post = (base: string, place: string, body: unknown, headers: Record<string, string> = {}, token = TOKEN) =>
  call(`${base}/v1/conversations/${encodeURIComponent(place)}/messages`, { method: "POST", body: typeof body === "string" ? body : JSON.stringify(body), headers: { "content-type": "application/json", ...headers }, token })

const awaitReplies = (base: string, place: string, n: number) =>
  eventually(
    Effect.map(call(`${base}/v1/conversations/${encodeURIComponent(place)}/replies?after=0`), (r) =>
      r.body.replies.length >= n ? (r.body.replies as Array<{ id: number; key: string; text: string }>) : undefined),
    { label: `${n} replies in ${place}` }
  )

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

  it.scopedLive("an idempotency key belongs to (token, place): another token or place reusing it posts a new message", () =>
    Effect.gen(function* () {
      const { ctx, base } = yield* withHost(runtimeFor())
      const key = { "idempotency-key": "K" }
      const texts = (place: string) =>
        Effect.flatMap(MessageStore, (s) => s.recent(ConversationId.make(`web:${place}`), 100)).pipe(
          Effect.map((ms) => ms.filter((m) => m.direction === "in").map((m) => m.text)),
          Effect.provide(ctx)
        )
      // The attack of the red-team run: token A to place a, then token B to place b with A's key.
      const a = yield* post(base, "a", { text: "from A to a" }, key, TOKEN)
      const b = yield* post(base, "b", { text: "from B to b" }, key, TOKEN_B)
      assert.deepStrictEqual([a.status, a.body.duplicate, b.status, b.body.duplicate], [202, false, 202, false])
      assert.notStrictEqual(b.body.messageId, a.body.messageId)
      assert.strictEqual(b.body.conversationId, "web:b")
      // The same key from the other token in the same place, or from the same token in another place.
      const otherToken = yield* post(base, "a", { text: "from B to a" }, key, TOKEN_B)
      const otherPlace = yield* post(base, "b", { text: "from A to b" }, key, TOKEN)
      for (const r of [otherToken, otherPlace]) assert.deepStrictEqual([r.status, r.body.duplicate], [202, false])
      assert.strictEqual(new Set([a, b, otherToken, otherPlace].map((r) => r.body.messageId)).size, 4)
      assert.sameMembers(yield* texts("a"), ["from A to a", "from B to a"])
      assert.sameMembers(yield* texts("b"), ["from B to b", "from A to b"])
    }))

  it.scopedLive("the same key with the same body is a duplicate; with another body it is 409 and nothing is written", () =>
    Effect.gen(function* () {
      const { ctx, base } = yield* withHost(runtimeFor())
      const key = { "idempotency-key": "K" }
      const first = yield* post(base, "a", { text: "hello", sender: "me" }, key)
      const retry = yield* post(base, "a", { text: "hello", sender: "me" }, key)
      assert.deepStrictEqual([retry.status, retry.body.duplicate, retry.body.messageId], [202, true, first.body.messageId])
      for (const changed of [{ text: "hello!", sender: "me" }, { text: "hello", sender: "someone else" }, { text: "hello" }]) {
        const reused = yield* post(base, "a", changed, key)
        assert.strictEqual(reused.status, 409)
        assert.strictEqual(reused.body.error, "idempotency_key_reused")
        assert.deepStrictEqual(reused.body.problems.map((p: { path: string }) => p.path), ["header.Idempotency-Key"])
      }
      const inbound = yield* Effect.flatMap(MessageStore, (s) => s.recent(ConversationId.make("web:a"), 100)).pipe(Effect.provide(ctx))
      assert.deepStrictEqual(inbound.filter((m) => m.direction === "in").map((m) => [m.id, m.sender, m.text]), [[first.body.messageId, "me", "hello"]])
      // A body sent without a key is never mistaken for a keyed one.
      const unkeyed = yield* post(base, "a", { text: "hello", sender: "me" })
      assert.deepStrictEqual([unkeyed.status, unkeyed.body.duplicate], [202, false])
      assert.notStrictEqual(unkeyed.body.messageId, first.body.messageId)
    }))

  it.scopedLive("two concurrent posts with one key and different bodies: one is stored, the other gets 409", () =>
    Effect.gen(function* () {
      const { ctx, base } = yield* withHost(runtimeFor())
      const key = { "idempotency-key": "race" }
      const results = yield* Effect.all([1, 2, 3, 4].map((n) => post(base, "r", { text: `body ${n}` }, key)), { concurrency: "unbounded" })
      const stored = results.filter((r) => r.status === 202)
      assert.strictEqual(stored.length, 1)
      assert.isFalse(stored[0]!.body.duplicate)
      assert.deepStrictEqual(results.filter((r) => r.status !== 202).map((r) => [r.status, r.body.error]), Array(3).fill([409, "idempotency_key_reused"]))
      const winner = results.indexOf(stored[0]!) + 1
      const inbound = yield* Effect.flatMap(MessageStore, (s) => s.recent(ConversationId.make("web:r"), 100)).pipe(Effect.provide(ctx))
      assert.deepStrictEqual(inbound.filter((m) => m.direction === "in").map((m) => [m.id, m.text]), [[stored[0]!.body.messageId, `body ${winner}`]])
    }))

  it.scopedLive("the body digest is the receipt's fingerprint: keyed posts write no cursor rows", () =>
    Effect.gen(function* () {
      const { ctx, base } = yield* withHost(runtimeFor())
      for (const k of ["f-1", "f-2", "f-1"]) yield* post(base, "f", { text: "same body" }, { "idempotency-key": k })
      const conflict = yield* post(base, "f", { text: "other body" }, { "idempotency-key": "f-1" })
      assert.strictEqual(conflict.status, 409)
      const [counts] = yield* Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql<{ receipts: number; cursors: number }>`SELECT (SELECT COUNT(*) FROM receipts) AS receipts, (SELECT COUNT(*) FROM cursors) AS cursors`).pipe(Effect.provide(ctx))
      assert.deepStrictEqual([counts!.receipts, counts!.cursors], [2, 0])
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

  it.scopedLive("a streaming agent: the stream shows its deltas (no id) before the one reply, with the reply's key", () =>
    Effect.gen(function* () {
      const runtime = runtimeFor()
      // The turn holds its reply until the client has seen the three deltas (no race, no timing).
      let sawDeltas!: () => void
      const seen = new Promise<void>((resolve) => (sawDeltas = resolve))
      yield* Layer.build(makeTestHost(config(tempDir()), { executor: streamingExecutor({ pieces: 3, hold: () => seen }), runtimes: [{ plugin: "http", value: runtime }] }))
      const base = `http://127.0.0.1:${runtime.port()}`
      const events = yield* Effect.promise(async () => {
        const abort = new AbortController()
        const res = await fetch(`${base}/v1/conversations/d/stream`, { headers: { authorization: `Bearer ${TOKEN}` }, signal: abort.signal })
        await fetch(`${base}/v1/conversations/d/messages`, { method: "POST", headers: { authorization: `Bearer ${TOKEN}` }, body: JSON.stringify({ text: "in pieces" }) })
        const reader = res.body!.getReader()
        let text = ""
        while (!text.includes("event: reply")) {
          const { value, done } = await reader.read()
          if (done) break
          text += new TextDecoder().decode(value)
          if ((text.match(/event: delta/g) ?? []).length === 3) sawDeltas()
        }
        abort.abort()
        return text
      })
      const blocks = events.split("\n\n").filter((b) => /^event: /m.test(b))
      const kinds = blocks.map((b) => /^event: (\w+)$/m.exec(b)![1])
      assert.deepStrictEqual(kinds, ["delta", "delta", "delta", "reply"])
      const dataOf = (b: string) => JSON.parse(/^data: (.*)$/m.exec(b)![1]!)
      const deltas = blocks.slice(0, 3).map(dataOf)
      const reply = dataOf(blocks[3]!)
      assert.strictEqual(deltas.map((d) => d.text).join(""), "echo: in pieces")
      assert.isTrue(deltas.every((d) => d.key === reply.key && d.conversationId === "web:d" && typeof d.turnId === "number"))
      assert.isTrue(blocks.slice(0, 3).every((b) => !/^id: /m.test(b)), "deltas carry no id: Last-Event-ID resumes replies only")
      assert.strictEqual(reply.text, "echo: in pieces")
      const listed = yield* awaitReplies(base, "d", 1)
      assert.deepStrictEqual(listed.map((r) => r.text), ["echo: in pieces"])
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

  it.scopedLive("places: 1-255 characters are served; longer, empty, badly encoded, '.', '..' or holding a control character is a 400 naming place; CONNECT gets a status line", () =>
    Effect.gen(function* () {
      const { ctx, base } = yield* withHost(runtimeFor())
      const port = Number(new URL(base).port)
      // 101-255 characters are places like any other (a router limit once made them 404), in any script.
      for (const place of ["p".repeat(101), "p".repeat(255), "é".repeat(255), "日本".repeat(127)]) {
        const r = yield* post(base, place, { text: "x" })
        assert.deepStrictEqual([r.status, r.body.conversationId], [202, `web:${place}`], `${place.length} characters`)
      }
      // Sent as raw bytes: fetch would normalise '..' and re-encode the rest.
      const raw = (request: string) =>
        Effect.async<string>((resume) => {
          const socket = net.connect(port, "127.0.0.1", () => socket.end(request))
          let answer = ""
          socket.setEncoding("latin1").on("data", (d: string) => (answer += d))
          socket.on("close", () => resume(Effect.succeed(answer)))
          socket.on("error", () => resume(Effect.succeed(answer)))
        })
      const request = (method: string, target: string, body = "") =>
        raw(`${method} ${target} HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${TOKEN}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`)
      const bad = ["p".repeat(256), "%C3%A9".repeat(256), "", "%zz", "a%", "%ED%A0%80", "%F0%9F", ".", "..", "%2E%2E", "%00", "a%0Ab", "a%09b", "%C2%85", "%20a", "a%20"]
      for (const segment of bad) {
        for (const [method, suffix, body] of [["POST", "messages", "{\"text\":\"x\"}"], ["GET", "replies?after=0", ""], ["GET", "stream", ""]] as const) {
          const answer = yield* request(method, `/v1/conversations/${segment}/${suffix}`, body)
          const [head, json] = answer.split("\r\n\r\n")
          const label = `${method} ${segment.slice(0, 30)}/${suffix}`
          assert.match(head!, /^HTTP\/1\.1 400 /, label)
          const parsed = JSON.parse(json!.replace(/^[0-9a-f]+\r\n|\r\n0\r\n$/g, ""))
          assert.strictEqual(parsed.error, "invalid_request", label)
          assert.deepStrictEqual(parsed.problems.map((p: { path: string }) => p.path), ["place"], label)
        }
      }
      // No conversation was made with any of them.
      const conversations = yield* Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ id: string }>`SELECT id FROM conversations`).pipe(Effect.provide(ctx))
      assert.strictEqual(conversations.length, 4)
      // CONNECT is answered with a status line, not a closed socket.
      const connect = yield* raw("CONNECT example.com:443 HTTP/1.1\r\nhost: example.com:443\r\n\r\n")
      assert.match(connect, /^HTTP\/1\.1 405 /)
      // The server still serves.
      assert.strictEqual((yield* post(base, "after", { text: "x" })).status, 202)
    }))

  it.scopedLive("a body over maxBodyBytes gets its 413 (the client sent it all and reads the answer, no reset)", () =>
    Effect.gen(function* () {
      const { base } = yield* withHost(runtimeFor())
      // Just over the limit, and well over it (several MB: the server reads and drops the rest).
      for (const size of [262_145, 4_000_000]) {
        const r = yield* post(base, "big", { text: "x".repeat(size) })
        assert.deepStrictEqual([r.status, r.body], [413, { error: "payload_too_large", limit: 262_144 }])
      }
      // The server is fine afterwards.
      const ok = yield* post(base, "big", { text: "small" })
      assert.strictEqual(ok.status, 202)
    }))

  it.scopedLive("replies and the stream are scoped to the caller's token", () =>
    Effect.gen(function* () {
      const { base } = yield* withHost(runtimeFor())
      yield* post(base, "shared", { text: "from A" }, {}, TOKEN)
      const a = yield* awaitReplies(base, "shared", 1)
      assert.deepStrictEqual(a.map((r) => r.text), ["echo: from A"])
      const b = yield* call(`${base}/v1/conversations/shared/replies?after=0`, { token: TOKEN_B })
      assert.deepStrictEqual([b.status, b.body.replies], [200, []])
      yield* post(base, "shared", { text: "from B" }, {}, TOKEN_B)
      const bAfter = yield* Effect.gen(function* () {
        while (true) {
          const r = yield* call(`${base}/v1/conversations/shared/replies?after=0`, { token: TOKEN_B })
          if (r.body.replies.length > 0) return r.body.replies as Array<{ text: string }>
          yield* Effect.sleep("10 millis")
        }
      })
      assert.deepStrictEqual(bAfter.map((r) => r.text), ["echo: from B"])
      const aAgain = yield* call(`${base}/v1/conversations/shared/replies?after=0`)
      assert.deepStrictEqual(aAgain.body.replies.map((r: { text: string }) => r.text), ["echo: from A"])
    }))

  it("bad settings name the field", () => {
    assert.throws(() => decodeHttpSettings("web", { kind: "http", port: 70_000, tokens: ["plain-token"] }), /^connections\.web\.port: .*; connections\.web\.tokens\.0: must be the SHA-256 hex digest[^;]*\(found a string of 11 characters\)$/)
    assert.throws(() => decodeHttpSettings("web", { kind: "http", port: 1 }), /connections\.web\.tokens/)
  })
})
