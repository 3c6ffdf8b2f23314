/**
 * The Discord connection runtime, with the real discord.js against the project's fake gateway and
 * REST API (test/support/discord.ts), through a test host and the scripted core: replies, typing,
 * redeliveries deduplicated, long replies in parts, group triggers, 429s, bad payloads, a gateway
 * drop with RESUME and catch-up, a host that was down, and nonce-deduplicated resends.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Layer, Option } from "effect"
import { SqlClient } from "@effect/sql"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll } from "vitest"
import { makeTestHost } from "../../layers/test.js"
import { makeDiscordRuntime, MESSAGE_LIMIT, MESSAGES_STREAM, nonceOf } from "../../src/channels/discord/DiscordRuntime.js"
import { readPositions } from "../../src/channels/discord/messages.js"
import { decodeDiscordSettings } from "../../src/channels/discord/settings.js"
import { partKey } from "../../src/channels/parts.js"
import { splitText } from "../../src/channels/split.js"
import { decodeConfig } from "../../src/config/HostConfig.js"
import { DeliveryStore } from "../../src/db/DeliveryStore.js"
import { MessageStore } from "../../src/db/MessageStore.js"
import { ConnectionName } from "../../src/domain/ids.js"
import { isOutcomeUnknown } from "../../src/contracts/channel.js"
import { Channels } from "../../src/pipeline/Channels.js"
import { tempDir } from "../support/db.js"
import { type FakeDiscord, startDiscord } from "../support/discord.js"
import { eventually } from "../support/eventually.js"
import { streamingExecutor } from "../support/streaming.js"
import { contextEcho } from "../support/context-echo.js"

let dc: FakeDiscord
beforeAll(async () => {
  dc = await startDiscord()
})
afterAll(() => dc.stop())

let channels = 500_000_000_000_000_000n
const nextChannel = () => String(++channels)
const ada = { id: "800000000000000001", username: "ada" }
const bob = { id: "800000000000000002", username: "bob" }
const GUILD = "700000000000000001"

const runtimeIn = (dir: string, extra: Record<string, unknown> = {}) => {
  fs.writeFileSync(path.join(dir, "dc.token"), dc.token + "\n", { mode: 0o600 })
  return makeDiscordRuntime({ name: "dc", settings: decodeDiscordSettings("dc", { kind: "discord", tokenFile: "dc.token", apiRoot: dc.apiRoot, ...extra }), dataDir: dir })
}

const hostConfig = (dir: string, route: Record<string, unknown> = {}) =>
  Either.getOrThrow(decodeConfig({
    dataDir: dir,
    workspaces: [{ id: "main", instructions: "test" }],
    routes: [{ connection: "dc", place: "*", workspace: "main", ...route }],
    connections: {},
    limits: { runtimeReadyTimeoutMs: 20_000, readinessCheckMs: 100 }
  }, "test config"))

const repliesTo = (channelId: string, text: string) => dc.sent(channelId).filter((t) => t === `echo: ${text}`).length
const awaitReply = (channelId: string, text: string) =>
  eventually(() => (repliesTo(channelId, text) > 0 ? true : undefined), { label: `the reply to '${text}' in ${channelId}` })
const ready = (runtime: ReturnType<typeof runtimeIn>) => Effect.runSync(runtime.isReady)

describe("Discord runtime against the fake gateway", () => {
  it.scopedLive("a direct message gets the reply; the bot types; the message id is the receipt and the cursor", () =>
    Effect.gen(function* () {
      let release!: () => void
      const held = new Promise<void>((resolve) => (release = resolve))
      const dir = tempDir()
      const runtime = runtimeIn(dir)
      const ctx = yield* Layer.build(makeTestHost(hostConfig(dir), { executor: streamingExecutor({ hold: () => held }), runtimes: [{ plugin: "discord", value: runtime }] }))
      assert.isTrue(ready(runtime))
      const dm = nextChannel()
      const said = dc.say({ channelId: dm, author: ada, content: "hello there" })
      yield* eventually(() => (dc.typing(dm) > 0 ? true : undefined), { label: "the bot typing" })
      assert.strictEqual(repliesTo(dm, "hello there"), 0)
      release()
      yield* awaitReply(dm, "hello there")
      // The bot's own message came back through the gateway and was not ingested.
      const store = yield* Effect.provide(MessageStore, ctx)
      const inbound = (yield* store.recent(`dc:${dm}` as never, 10)).filter((m) => m.direction === "in")
      assert.deepStrictEqual(inbound.map((m) => m.text), ["hello there"])
      const cursor = yield* store.cursor(ConnectionName.make("dc"), MESSAGES_STREAM)
      assert.isTrue(Option.isSome(cursor))
      assert.deepStrictEqual(readPositions(Option.getOrThrow(cursor).position), { [dm]: said.id })
      // Sends carry a nonce and ping nobody.
      assert.strictEqual(dc.sentRaw(dm)[0]!.nonce!.length, 25)

      // A redelivered message (same id) is a duplicate: no second turn, no second reply.
      dc.redeliver(said)
      dc.say({ channelId: dm, author: ada, content: "second" })
      yield* awaitReply(dm, "second")
      assert.strictEqual(repliesTo(dm, "hello there"), 1)
      const after = (yield* store.recent(`dc:${dm}` as never, 10)).filter((m) => m.direction === "in")
      assert.deepStrictEqual(after.map((m) => m.text), ["hello there", "second"])
    }))

  it.scopedLive("a long reply goes out in numbered parts of at most 2,000 characters, in order", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const runtime = runtimeIn(dir)
      yield* Layer.build(makeTestHost(hostConfig(dir), { runtimes: [{ plugin: "discord", value: runtime }] }))
      const dm = nextChannel()
      const paragraph = (i: number) => `Paragraph ${i}: ` + "lorem ipsum dolor sit amet ".repeat(40).trim()
      const text = [1, 2, 3, 4].map(paragraph).join("\n\n")
      dc.say({ channelId: dm, author: ada, content: text })
      const expected = splitText(`echo: ${text}`, MESSAGE_LIMIT)
      assert.isAtLeast(expected.length, 3)
      yield* eventually(() => (dc.sent(dm).length >= expected.length ? true : undefined), { label: "every part" })
      assert.deepStrictEqual(dc.sent(dm), expected)
      for (const part of dc.sent(dm)) assert.isAtMost(part.length, MESSAGE_LIMIT)
      // Each part has its own nonce (its own key).
      assert.strictEqual(new Set(dc.sentRaw(dm).map((m) => m.nonce)).size, expected.length)
    }))

  it.scopedLive("a 429 is waited out by its Retry-After; the reply arrives once", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const runtime = runtimeIn(dir)
      yield* Layer.build(makeTestHost(hostConfig(dir), { runtimes: [{ plugin: "discord", value: runtime }] }))
      const dm = nextChannel()
      const before = dc.counts().posts
      dc.rateLimitSends(1, 1)
      dc.say({ channelId: dm, author: ada, content: "rate limited" })
      yield* awaitReply(dm, "rate limited")
      assert.strictEqual(dc.counts().posts - before, 2)
      // The retry came at least Retry-After later (a lower bound: never flaky).
      const times = dc.postTimes()
      const limited = times.map((t) => t.limited).lastIndexOf(true)
      assert.isAtLeast(times[limited + 1]!.at - times[limited]!.at, 995)
      assert.strictEqual(repliesTo(dm, "rate limited"), 1)
    }))

  it.scopedLive("malformed payloads, system messages, empty texts, bots and texts over the limit are refused without harm", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const runtime = runtimeIn(dir, { maxInboundChars: 1_000 })
      const ctx = yield* Layer.build(makeTestHost(hostConfig(dir), { runtimes: [{ plugin: "discord", value: runtime }] }))
      const dm = nextChannel()
      dc.dispatchRaw({ id: "not a snowflake", channel_id: dm, content: "x" })
      dc.dispatchRaw("garbage")
      dc.dispatchRaw(null)
      dc.dispatchRaw({ id: "1100000000000099998", channel_id: dm, author: { id: 5 }, content: ["x"] })
      dc.dispatchRaw({ id: "1100000000000099999", channel_id: dm, author: ada, content: "joined", type: 7 })
      dc.say({ channelId: dm, author: ada, content: "" })
      dc.say({ channelId: dm, author: { id: "800000000000000099", username: "otherbot", bot: true }, content: "from a bot" })
      dc.say({ channelId: dm, author: ada, content: "x".repeat(1_001) })
      dc.say({ channelId: dm, author: ada, content: "still here" })
      yield* awaitReply(dm, "still here")
      assert.isTrue(ready(runtime))
      const messages = yield* Effect.flatMap(MessageStore, (s) => s.recent(`dc:${dm}` as never, 50)).pipe(Effect.provide(ctx))
      assert.deepStrictEqual(messages.filter((m) => m.direction === "in").map((m) => m.text), ["still here"])
    }))
})

describe("Discord outages", () => {
  it.scopedLive("a gateway drop: not ready while down, RESUME after; messages sent meanwhile are caught up from the history and answered once", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const runtime = runtimeIn(dir)
      yield* Layer.build(makeTestHost(hostConfig(dir), { runtimes: [{ plugin: "discord", value: runtime }] }))
      const dm = nextChannel()
      const hidden = nextChannel()
      dc.say({ channelId: dm, author: ada, content: "before" })
      dc.say({ channelId: hidden, author: bob, content: "before, elsewhere" })
      yield* awaitReply(dm, "before")
      yield* awaitReply(hidden, "before, elsewhere")
      const { identifies, resumes } = dc.counts()

      dc.down()
      yield* eventually(() => (ready(runtime) ? undefined : true), { label: "not ready while the gateway is down" })
      const during = ["during 1", "during 2", "during 3"]
      for (const t of during) dc.say({ channelId: dm, author: ada, content: t })
      // A channel whose history the bot may no longer read is skipped; the others are caught up.
      dc.forbidHistory(hidden)
      dc.say({ channelId: hidden, author: bob, content: "lost with the access" })
      dc.up()
      yield* eventually(() => (ready(runtime) ? true : undefined), { label: "ready again" })
      assert.strictEqual(dc.counts().resumes, resumes + 1)
      assert.strictEqual(dc.counts().identifies, identifies)
      dc.say({ channelId: dm, author: ada, content: "after" })
      for (const t of [...during, "after"]) yield* awaitReply(dm, t)
      for (const t of ["before", ...during, "after"]) assert.strictEqual(repliesTo(dm, t), 1, t)
      assert.strictEqual(repliesTo(hidden, "lost with the access"), 0)
      assert.isTrue(ready(runtime))
    }))

  it.scopedLive("a RESUME that replays the missed events and a catch-up that reads them too: each message answered once", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const runtime = runtimeIn(dir)
      yield* Layer.build(makeTestHost(hostConfig(dir), { runtimes: [{ plugin: "discord", value: runtime }] }))
      const dm = nextChannel()
      dc.say({ channelId: dm, author: ada, content: "first" })
      yield* awaitReply(dm, "first")
      dc.down({ replay: true })
      yield* eventually(() => (ready(runtime) ? undefined : true), { label: "not ready" })
      const during = ["replayed 1", "replayed 2"]
      for (const t of during) dc.say({ channelId: dm, author: ada, content: t })
      dc.up()
      for (const t of during) yield* awaitReply(dm, t)
      dc.say({ channelId: dm, author: ada, content: "sentinel" })
      yield* awaitReply(dm, "sentinel")
      for (const t of ["first", ...during, "sentinel"]) assert.strictEqual(repliesTo(dm, t), 1, t)
    }))

  it.scopedLive("a session Discord forgot: RESUME refused (INVALID_SESSION), a fresh IDENTIFY and READY, and the catch-up after it", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const runtime = runtimeIn(dir)
      yield* Layer.build(makeTestHost(hostConfig(dir), { runtimes: [{ plugin: "discord", value: runtime }] }))
      const dm = nextChannel()
      dc.say({ channelId: dm, author: ada, content: "before" })
      yield* awaitReply(dm, "before")
      const { identifies } = dc.counts()
      dc.down({ forgetSessions: true })
      yield* eventually(() => (ready(runtime) ? undefined : true), { label: "not ready" })
      dc.say({ channelId: dm, author: ada, content: "while forgotten" })
      dc.up()
      yield* awaitReply(dm, "while forgotten")
      assert.strictEqual(dc.counts().identifies, identifies + 1)
      yield* eventually(() => (ready(runtime) ? true : undefined), { label: "ready again" })
      dc.say({ channelId: dm, author: ada, content: "after" })
      yield* awaitReply(dm, "after")
      for (const t of ["before", "while forgotten", "after"]) assert.strictEqual(repliesTo(dm, t), 1, t)
    }))

  it.live("a host that was down catches up from its durable cursor, more than one page per channel", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const db = path.join(dir, "pynchy.db")
      const dm = nextChannel()
      yield* Effect.scoped(Effect.gen(function* () {
        yield* Layer.build(makeTestHost(hostConfig(dir), { databaseFile: db, runtimes: [{ plugin: "discord", value: runtimeIn(dir) }] }))
        dc.say({ channelId: dm, author: ada, content: "first" })
        yield* awaitReply(dm, "first")
      }))
      const texts = Array.from({ length: 130 }, (_, i) => `offline ${i}`)
      for (const t of texts) dc.say({ channelId: dm, author: ada, content: t })
      const reads = dc.counts().historyReads
      yield* Effect.scoped(Effect.gen(function* () {
        yield* Layer.build(makeTestHost(hostConfig(dir), { databaseFile: db, runtimes: [{ plugin: "discord", value: runtimeIn(dir) }] }))
        yield* eventually(() => (texts.every((t) => repliesTo(dm, t) >= 1) ? true : undefined), { label: "a reply to every message sent while the host was down", timeout: "60 seconds" })
        assert.isAtLeast(dc.counts().historyReads - reads, 2)
        for (const t of ["first", ...texts]) assert.strictEqual(repliesTo(dm, t), 1, t)
      }))
    }))
})

describe("Discord sends after a crash", () => {
  it.scopedLive("a part a crash left `sending` is resent under its nonce within the window (Discord returns the first), and ends unknown after it", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const runtime = runtimeIn(dir)
      const ctx = yield* Layer.build(makeTestHost(hostConfig(dir), { runtimes: [{ plugin: "discord", value: runtime }] }))
      const channel = (yield* Effect.provide(Channels, ctx)).get("dc")!
      const parts = yield* Effect.provide(DeliveryStore, ctx)
      const sql = yield* Effect.provide(SqlClient.SqlClient, ctx)
      const dm = nextChannel()
      const delivery = { idempotencyKey: "crash-1", conversationId: `dc:${dm}`, connection: "dc", place: dm, kind: "reply" as const, text: "the reply", previousAttempts: 1 }

      // The crashed host claimed part 1 and its post reached Discord; the answer was lost.
      assert.strictEqual(yield* parts.claimPart(partKey("crash-1", 1)), "claimed")
      dc.postAsBot(dm, "the reply", nonceOf(partKey("crash-1", 1)))
      yield* channel.send(delivery)
      assert.deepStrictEqual(dc.sent(dm), ["the reply"])

      // Claimed longer ago than the window: never resent, the outcome is unknown.
      assert.strictEqual(yield* parts.claimPart(partKey("crash-2", 1)), "claimed")
      yield* sql`UPDATE delivery_parts SET updated_at = ${Date.now() - 10 * 60_000} WHERE part_key = ${partKey("crash-2", 1)}`
      const outcome = yield* Effect.match(channel.send({ ...delivery, idempotencyKey: "crash-2", text: "too late" }), { onSuccess: () => "sent" as const, onFailure: (e) => e })
      assert.isTrue(isOutcomeUnknown(outcome))
      assert.deepStrictEqual(dc.sent(dm), ["the reply"])
    }))

  it.scopedLive("through the outbox: a reply whose part is left `sending` beyond the window ends unknown and the user gets a notice", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const runtime = runtimeIn(dir)
      const ctx = yield* Layer.build(makeTestHost(hostConfig(dir), { runtimes: [{ plugin: "discord", value: runtime }] }))
      const deliveries = yield* Effect.provide(DeliveryStore, ctx)
      const sql = yield* Effect.provide(SqlClient.SqlClient, ctx)
      assert.strictEqual(yield* deliveries.claimPart(partKey("t1:0", 1)), "claimed")
      yield* sql`UPDATE delivery_parts SET updated_at = 0 WHERE part_key = ${partKey("t1:0", 1)}`
      const dm = nextChannel()
      dc.say({ channelId: dm, author: ada, content: "lost in a crash" })
      yield* eventually(() => (dc.sent(dm).length > 0 ? true : undefined), { label: "the notice" })
      assert.deepStrictEqual(dc.sent(dm), ["(The assistant restarted while sending a reply; it may be missing here.)"])
      assert.strictEqual((yield* deliveries.countByStatus)["unknown"], 1)
    }))
})


describe("Discord guild channels", () => {
  it.scopedLive("only triggered messages are answered (the trigger word, a mention of the bot, a reply to it); the others are context; DMs always", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const runtime = runtimeIn(dir)
      const ctx = yield* Layer.build(makeTestHost(hostConfig(dir, { trigger: "@assistant" }), { executor: contextEcho, runtimes: [{ plugin: "discord", value: runtime }] }))
      const store = yield* Effect.provide(MessageStore, ctx)
      const room = nextChannel()
      dc.say({ channelId: room, guildId: GUILD, author: ada, content: "lunch at noon?" })
      dc.say({ channelId: room, guildId: GUILD, author: bob, content: "I prefer one" })
      yield* eventually(
        store.recent(`dc:${room}` as never, 10).pipe(Effect.map((ms) => (ms.filter((m) => m.direction === "in" && m.handledBy !== null).length === 2 ? true : undefined))),
        { label: "the untriggered messages handled" }
      )
      assert.deepStrictEqual(dc.sent(room), [])
      // A mention of the bot (Discord's <@id>, listed in `mentions`) triggers.
      dc.say({ channelId: room, guildId: GUILD, author: ada, content: `<@${dc.bot.id}> so what time?`, mentions: [dc.bot.id] })
      yield* eventually(() => (dc.sent(room).length > 0 ? true : undefined), { label: "the reply to the mention" })
      assert.deepStrictEqual(dc.sent(room), [`context: lunch at noon? | I prefer one; new: <@${dc.bot.id}> so what time?`])
      // The route's trigger word, any case.
      dc.say({ channelId: room, guildId: GUILD, author: bob, content: "@Assistant, thanks" })
      yield* eventually(() => (dc.sent(room).length > 1 ? true : undefined), { label: "the reply to the trigger word" })
      // A reply to one of the bot's messages.
      const botMessage = dc.sentRaw(room)[0]!
      dc.say({ channelId: room, guildId: GUILD, author: ada, content: "and tomorrow?", replyTo: botMessage.id })
      yield* eventually(() => (dc.sent(room).length > 2 ? true : undefined), { label: "the reply to a reply" })
      assert.match(dc.sent(room)[2]!, /new: and tomorrow\?$/)
      // A message mentioning someone else is not for the bot.
      dc.say({ channelId: room, guildId: GUILD, author: ada, content: `<@${bob.id}> ok`, mentions: [bob.id] })
      const dm = nextChannel()
      dc.say({ channelId: dm, author: bob, content: "hi" })
      yield* eventually(() => (dc.sent(dm).length > 0 ? true : undefined), { label: "the direct reply" })
      assert.match(dc.sent(dm)[0]!, /new: hi$/)
      assert.strictEqual(dc.sent(room).length, 3)
    }))
})

describe("Discord settings", () => {
  it("bad settings throw naming the fields; exactly one credential", () => {
    assert.throws(() => decodeDiscordSettings("dc", { kind: "discord", tokenEnv: "lower case", apiRoot: "ftp://x" }), /connections\.dc: .*(tokenEnv|apiRoot)/)
    assert.throws(() => decodeDiscordSettings("dc", { kind: "discord" }), /connections\.dc\.tokenEnv: give exactly one/)
    assert.throws(() => decodeDiscordSettings("dc", { kind: "discord", tokenEnv: "A", tokenFile: "f" }), /tokenEnv\|tokenFile/)
    assert.throws(() => decodeDiscordSettings("dc", { kind: "discord", tokenEnv: "A", catchUpPages: -1 }), /catchUpPages/)
  })

  it("a routed discord connection gets a runtime; an unrouted one does not", async () => {
    const { default: plugin } = await import("../../src/channels/discord/plugin.js")
    const base = { dataDir: tempDir(), workspaces: [{ id: "main" }], connections: { dc: { kind: "discord", tokenEnv: "DISCORD_TOKEN" } } }
    const none = Either.getOrThrow(decodeConfig({ ...base, routes: [] }, "t"))
    const one = Either.getOrThrow(decodeConfig({ ...base, routes: [{ connection: "dc", place: "*", workspace: "main" }] }, "t"))
    const runtimesOf = (config: typeof none) =>
      plugin.connectionRuntime({ config, connectionConfig: (n: string) => (config.connections as Record<string, Record<string, unknown>>)[n] }) as Promise<ReadonlyArray<{ name: string }>>
    assert.deepStrictEqual(await runtimesOf(none), [])
    assert.strictEqual((await runtimesOf(one))[0]!.name, "dc")
  })
})
