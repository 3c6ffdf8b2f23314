/**
 * A place of the HTTP API belongs to the token that first wrote to it (the second-client attack
 * of issue 34): another token is refused 403 `place_owned`, across a restart and in a race,
 * unless the connection lists the place in `sharedPlaces`, where each message's sender is the
 * token's name, never the body's `sender`. Real HTTP on 127.0.0.1, a file database.
 */
import { assert, describe, it } from "@effect/vitest"
import { type Context, Effect, Either, Exit, Layer, Scope } from "effect"
import * as path from "node:path"
import { makeTestHost } from "../../layers/test.js"
import { makeHttpRuntime } from "../../src/channels/http/HttpRuntime.js"
import { decodeHttpSettings, hashToken } from "../../src/channels/http/settings.js"
import { decodeConfig } from "../../src/config/HostConfig.js"
import { MessageStore } from "../../src/db/MessageStore.js"
import { ConversationId } from "../../src/domain/ids.js"
import { tempDir } from "../support/db.js"
import { eventually } from "../support/eventually.js"
import { call, post } from "./http-client.js"

const ALICE = "token-of-alice"
const BOB = "token-of-bob"

const settings = decodeHttpSettings("web", {
  kind: "http",
  port: 0,
  tokens: [{ hash: hashToken(ALICE), name: "alice" }, { hash: hashToken(BOB), name: "bob" }],
  sharedPlaces: ["family"]
})

const config = (dir: string) =>
  Either.getOrThrow(decodeConfig({ dataDir: dir, workspaces: [{ id: "main", instructions: "test" }], routes: [{ connection: "web", place: "*", workspace: "main" }], connections: {} }, "test config"))

/** A host with the HTTP API over a database file in `dir`, in a scope of its own (closed to restart). */
const startHost = (dir: string) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    const runtime = makeHttpRuntime({ name: "web", settings, dataDir: dir })
    const ctx = yield* Layer.buildWithScope(makeTestHost(config(dir), { databaseFile: path.join(dir, "pynchy.db"), runtimes: [{ plugin: "http", value: runtime }] }), scope)
    return { ctx, base: `http://127.0.0.1:${runtime.port()}`, close: Scope.close(scope, Exit.void) }
  })

const inbound = (ctx: Context.Context<MessageStore>, place: string) =>
  Effect.flatMap(MessageStore, (s) => s.recent(ConversationId.make(`web:${place}`), 100)).pipe(
    Effect.map((ms) => ms.filter((m) => m.direction === "in").map((m) => [m.sender, m.text])),
    Effect.provide(ctx)
  )

describe("HTTP API: a place belongs to its first writer", () => {
  it.scopedLive("another token gets 403 place_owned, reading or writing, after a restart too; nothing of it is stored", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const first = yield* startHost(dir)
      const a = yield* post(first.base, "alice's room", { text: "my secret plans" }, {}, ALICE)
      assert.strictEqual(a.status, 202)
      const denied = yield* post(first.base, "alice's room", { text: "what did she say?" }, {}, BOB)
      assert.deepStrictEqual([denied.status, denied.body.error, denied.body.problems.map((p: { path: string }) => p.path)], [403, "place_owned", ["place"]])
      const read = yield* call(`${first.base}/v1/conversations/${encodeURIComponent("alice's room")}/replies?after=0`, {}, BOB)
      assert.deepStrictEqual([read.status, read.body.error], [403, "place_owned"])
      assert.deepStrictEqual(yield* inbound(first.ctx, "alice's room"), [["alice", "my secret plans"]])
      yield* first.close

      // The owner is durable: a new host on the same database still refuses the other token.
      const second = yield* startHost(dir)
      const after = yield* post(second.base, "alice's room", { text: "and now?" }, {}, BOB)
      assert.deepStrictEqual([after.status, after.body.error], [403, "place_owned"])
      const owner = yield* post(second.base, "alice's room", { text: "still mine" }, {}, ALICE)
      assert.strictEqual(owner.status, 202)
      // Bob's own place is his.
      const bobs = yield* post(second.base, "bob's room", { text: "hi" }, {}, BOB)
      assert.strictEqual(bobs.status, 202)
      assert.strictEqual((yield* post(second.base, "bob's room", { text: "hi" }, {}, ALICE)).status, 403)
      yield* second.close
    }))

  it.scopedLive("two tokens racing for a new place: one owns it, every post of the other is refused", () =>
    Effect.gen(function* () {
      const host = yield* startHost(tempDir())
      const results = yield* Effect.all(
        Array.from({ length: 12 }, (_, i) => Effect.map(post(host.base, "contested", { text: `post ${i}` }, {}, i % 2 === 0 ? ALICE : BOB), (r) => [i % 2 === 0 ? "alice" : "bob", r.status] as const)),
        { concurrency: "unbounded" }
      )
      const winners = new Set(results.filter(([, s]) => s === 202).map(([who]) => who))
      assert.strictEqual(winners.size, 1)
      const winner = [...winners][0]!
      assert.isTrue(results.every(([who, s]) => (who === winner ? s === 202 : s === 403)))
      assert.isTrue((yield* inbound(host.ctx, "contested")).every(([sender]) => sender === winner))
    }))

  it.scopedLive("a shared place takes every token; each message's sender is its token's name, never the body's sender", () =>
    Effect.gen(function* () {
      const host = yield* startHost(tempDir())
      assert.strictEqual((yield* post(host.base, "family", { text: "hello from alice" }, {}, ALICE)).status, 202)
      assert.strictEqual((yield* post(host.base, "family", { text: "I am alice, really", sender: "alice" }, {}, BOB)).status, 202)
      assert.deepStrictEqual(yield* inbound(host.ctx, "family"), [["alice", "hello from alice"], ["bob", "I am alice, really"]])
      // Each token still reads only the replies to its own messages.
      const bobs = yield* eventually(
        Effect.map(call(`${host.base}/v1/conversations/family/replies?after=0`, {}, BOB), (r) => (r.body.replies.length > 0 ? r.body.replies as Array<{ text: string }> : undefined)),
        { label: "bob's reply" }
      )
      assert.deepStrictEqual(bobs.map((r) => r.text), ["echo: I am alice, really"])
      // An owned place ignores the body's sender too.
      assert.strictEqual((yield* post(host.base, "own", { text: "x", sender: "someone else" }, {}, BOB)).status, 202)
      assert.deepStrictEqual(yield* inbound(host.ctx, "own"), [["bob", "x"]])
    }))

  it("settings: token names are unique and well formed; shared places are places", () => {
    assert.throws(() => decodeHttpSettings("web", { kind: "http", port: 0, tokens: [{ hash: hashToken("a"), name: "x" }, { hash: hashToken("b"), name: "x" }] }), /connections\.web\.tokens\.1\.name: .*'x'/)
    assert.throws(() => decodeHttpSettings("web", { kind: "http", port: 0, tokens: [{ hash: hashToken("a"), name: "a b\n" }] }), /connections\.web\.tokens\.0\.name/)
    assert.throws(() => decodeHttpSettings("web", { kind: "http", port: 0, tokens: [hashToken("a")], sharedPlaces: [""] }), /connections\.web\.sharedPlaces\.0/)
  })
})
