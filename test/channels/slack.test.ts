/**
 * The Slack connection runtime, through real @slack/bolt, against the project's fake Slack
 * (test/support/slack.ts): Socket Mode replies in DMs, channels and threads, acks after the
 * commit, a redelivered event deduplicated by its event id, mrkdwn, a dropped socket and an outage
 * with reconnect, bad events refused, group triggers with context, long replies in parts and
 * their resend, the unknown outcome and its notice, and signed HTTP events.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Layer, Option } from "effect"
import * as net from "node:net"
import { afterAll, beforeAll } from "vitest"
import { makeTestHost } from "../../layers/test.js"
import { partKey } from "../../src/channels/parts.js"
import { decodeSlackSettings } from "../../src/channels/slack/settings.js"
import { EVENTS_STREAM, MESSAGE_LIMIT, makeSlackRuntime } from "../../src/channels/slack/SlackRuntime.js"
import { splitText } from "../../src/channels/split.js"
import { decodeConfig } from "../../src/config/HostConfig.js"
import { DeliveryStore } from "../../src/db/DeliveryStore.js"
import { MessageStore } from "../../src/db/MessageStore.js"
import { ConnectionName } from "../../src/domain/ids.js"
import { isOutcomeUnknown } from "../../src/contracts/channel.js"
import { Channels } from "../../src/pipeline/Channels.js"
import { tempDir } from "../support/db.js"
import { eventually } from "../support/eventually.js"
import { type FakeSlack, signedRequest, startFakeSlack } from "../support/slack.js"
import { contextEcho } from "../support/context-echo.js"

let slack: FakeSlack
beforeAll(async () => {
  slack = await startFakeSlack()
  process.env["PYNCHY_TEST_SLACK_BOT"] = slack.botToken
  process.env["PYNCHY_TEST_SLACK_APP"] = slack.appToken
  process.env["PYNCHY_TEST_SLACK_SIGNING"] = SIGNING_SECRET
})
afterAll(() => slack.stop())

const SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
let channels = 100
const nextChannel = (prefix = "C") => `${prefix}${++channels}`

const runtimeWith = (extra: Record<string, unknown> = {}) =>
  makeSlackRuntime({
    name: "sl",
    settings: decodeSlackSettings("sl", { kind: "slack", botTokenEnv: "PYNCHY_TEST_SLACK_BOT", appTokenEnv: "PYNCHY_TEST_SLACK_APP", apiUrl: slack.apiUrl, maxBackoffMs: 200, ...extra })
  })

const hostConfig = (dir: string, trigger?: string) =>
  Either.getOrThrow(decodeConfig({
    dataDir: dir,
    workspaces: [{ id: "main", instructions: "test" }],
    routes: [{ connection: "sl", place: "*", workspace: "main", ...(trigger !== undefined ? { trigger } : {}) }],
    connections: {},
    limits: { runtimeReadyTimeoutMs: 20_000, readinessCheckMs: 100 }
  }, "test config"))

const texts = (channel: string, threadTs?: string) => slack.posted(channel, threadTs).map((p) => p.text)
const repliesTo = (channel: string, text: string) => texts(channel).filter((t) => t === `echo: ${text}`).length
const awaitPosts = (channel: string, n: number) =>
  eventually(() => (slack.posted(channel).length >= n ? true : undefined), { label: `${n} posts in ${channel}` })
const freePort = () =>
  new Promise<number>((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as net.AddressInfo).port
      s.close(() => resolve(port))
    })
  })

describe("Slack runtime in Socket Mode against the fake Slack", () => {
  it.scopedLive("a DM gets the reply; the envelope is acked after the commit; a redelivered event is a duplicate; the cursor notes the place's last message", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const runtime = runtimeWith()
      const ctx = yield* Layer.build(makeTestHost(hostConfig(dir), { runtimes: [{ plugin: "slack", value: runtime }] }))
      assert.isTrue(Effect.runSync(runtime.isReady))
      const dm = nextChannel("D")
      const sent = slack.say({ channel: dm, text: "hello there" })
      // Acked only after the commit: once the ack is in, the message is stored.
      yield* eventually(() => (slack.acked().has(slack.envelopeOf(sent.eventId)!) ? true : undefined), { label: "the ack" })
      const stored = yield* Effect.flatMap(MessageStore, (s) => s.recent(`sl:${dm}` as never, 10)).pipe(Effect.provide(ctx))
      assert.deepStrictEqual(stored.filter((m) => m.direction === "in").map((m) => m.text), ["hello there"])
      yield* awaitPosts(dm, 1)
      assert.deepStrictEqual(texts(dm), ["echo: hello there"])
      const store = yield* Effect.provide(MessageStore, ctx)
      const cursor = yield* store.cursor(ConnectionName.make("sl"), EVENTS_STREAM)
      assert.isTrue(Option.isSome(cursor))
      assert.deepStrictEqual(JSON.parse(Option.getOrThrow(cursor).position), { [dm]: sent.ts })

      // Slack retries an event (its ack was lost): acked again, not stored twice, not answered twice.
      slack.redeliver(sent)
      yield* eventually(() => (slack.acked().has(slack.envelopeOf(sent.eventId)!) ? true : undefined), { label: "the redelivery acked" })
      slack.say({ channel: dm, text: "after the retry" })
      yield* awaitPosts(dm, 2)
      assert.deepStrictEqual(texts(dm), ["echo: hello there", "echo: after the retry"])
      const inbound = (yield* store.recent(`sl:${dm}` as never, 10)).filter((m) => m.direction === "in")
      assert.deepStrictEqual(inbound.map((m) => m.text), ["hello there", "after the retry"])
    }))

  it.scopedLive("a thread is its own place and the reply goes into the thread; Markdown goes out as mrkdwn and Slack's entities come in decoded", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const runtime = runtimeWith()
      const ctx = yield* Layer.build(makeTestHost(hostConfig(dir), { runtimes: [{ plugin: "slack", value: runtime }] }))
      const channel = nextChannel()
      // In a channel, the app answers when it is mentioned (../triggers.ts).
      const mention = `<@${slack.botUserId}>`
      const parent = slack.say({ channel, text: `${mention} top level` })
      yield* awaitPosts(channel, 1)
      assert.strictEqual(slack.posted(channel)[0]!.threadTs, undefined)
      slack.say({ channel, text: `${mention} **bold** &amp; \`a &lt; b\``, threadTs: parent.ts })
      yield* awaitPosts(channel, 2)
      const reply = slack.posted(channel)[1]!
      assert.strictEqual(reply.threadTs, parent.ts)
      // The agent read "**bold** & `a < b`"; its Markdown reply is mrkdwn with & and < escaped again.
      assert.strictEqual(reply.text, `echo: <@${slack.botUserId}> *bold* &amp; \`a &lt; b\``)
      const conversations = yield* Effect.flatMap(MessageStore, (s) => s.recent(`sl:${channel}/${parent.ts}` as never, 10)).pipe(Effect.provide(ctx))
      assert.deepStrictEqual(conversations.filter((m) => m.direction === "in").map((m) => m.text), [`${mention} **bold** & \`a < b\``])
    }))

  it.scopedLive("malformed events, other event types, subtypes, bots and texts over the limit are acked and skipped; the runtime goes on", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const runtime = runtimeWith({ maxInboundChars: 1_000 })
      const ctx = yield* Layer.build(makeTestHost(hostConfig(dir), { runtimes: [{ plugin: "slack", value: runtime }] }))
      const dm = nextChannel("D")
      const base = { type: "event_callback", team_id: "T0001" }
      const bad = [
        slack.sendBody({ garbage: true }),
        slack.sendBody("not even an object"),
        slack.sendBody({ ...base, event_id: "EvX1", event: { type: "reaction_added", user: "U1", reaction: "tada" } }),
        slack.sendBody({ ...base, event_id: "EvX2", event: { type: "message", subtype: "message_changed", channel: dm, ts: "1.1" } }),
        slack.sendBody({ ...base, event_id: "EvX3", event: { type: "message", channel: dm, user: "U1", text: 42, ts: "1.2" } }),
        slack.sendBody({ ...base, event_id: "EvX4", event: { type: "message", channel: dm, user: "U2", bot_id: "B9", text: "from a bot", ts: "1.3" } })
      ]
      slack.say({ channel: dm, text: "x".repeat(1_001) })
      slack.say({ channel: dm, text: "still here" })
      yield* awaitPosts(dm, 1)
      assert.deepStrictEqual(texts(dm), ["echo: still here"])
      for (const envelope of bad) assert.isTrue(slack.acked().has(envelope), `envelope ${envelope} acked`)
      assert.isTrue(Effect.runSync(runtime.isReady))
      const messages = yield* Effect.flatMap(MessageStore, (s) => s.recent(`sl:${dm}` as never, 50)).pipe(Effect.provide(ctx))
      assert.deepStrictEqual(messages.filter((m) => m.direction === "in").map((m) => m.text), ["still here"])
    }))

  it.scopedLive("a dropped socket and a refresh are reconnected at once; during an outage isReady is false and the events Slack holds arrive after it, answered once", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const runtime = runtimeWith()
      yield* Layer.build(makeTestHost(hostConfig(dir), { runtimes: [{ plugin: "slack", value: runtime }] }))
      const dm = nextChannel("D")
      slack.say({ channel: dm, text: "before" })
      yield* awaitPosts(dm, 1)

      const opens = slack.calls("apps.connections.open")
      slack.dropSockets()
      yield* eventually(() => (slack.calls("apps.connections.open") > opens && slack.connections() === 1 && Effect.runSync(runtime.isReady) ? true : undefined), { label: "reconnected after the drop" })
      slack.say({ channel: dm, text: "after the drop" })
      slack.refresh()
      yield* eventually(() => (slack.calls("apps.connections.open") > opens + 1 && slack.connections() === 1 ? true : undefined), { label: "reconnected after the refresh" })
      slack.say({ channel: dm, text: "after the refresh" })

      yield* Effect.promise(() => slack.down())
      yield* eventually(() => (Effect.runSync(runtime.isReady) ? undefined : true), { label: "not ready while Slack is down" })
      const during = ["during 1", "during 2", "during 3"]
      for (const t of during) slack.say({ channel: dm, text: t })
      yield* Effect.promise(() => slack.up())
      // Every socket was cut by the outage: an open one now is a reconnection after it.
      yield* eventually(() => (Effect.runSync(runtime.isReady) && slack.connections() === 1 ? true : undefined), { label: "ready again, on a new socket" })
      for (const t of ["before", "after the drop", "after the refresh", ...during]) {
        yield* eventually(() => (repliesTo(dm, t) > 0 ? true : undefined), { label: `the reply to '${t}'` })
      }
      for (const t of ["before", "after the drop", "after the refresh", ...during]) assert.strictEqual(repliesTo(dm, t), 1, t)
    }))

  it.scopedLive("after an outage longer than Slack's redelivery, each known place's history is read from its cursor: what was lost is answered once, in order, over several pages; a message that also comes as an event is not doubled", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const runtime = runtimeWith()
      yield* Layer.build(makeTestHost(hostConfig(dir), { runtimes: [{ plugin: "slack", value: runtime }] }))
      const dm = nextChannel("D")
      const start = slack.say({ channel: dm, text: "start" })
      yield* awaitPosts(dm, 1)
      const thread = `${dm}/${start.ts}`
      slack.say({ channel: dm, text: "in the thread", threadTs: start.ts })
      yield* eventually(() => (slack.posted(dm, start.ts).length === 1 ? true : undefined), { label: "the reply in the thread" })

      yield* Effect.promise(() => slack.down())
      yield* eventually(() => (Effect.runSync(runtime.isReady) ? undefined : true), { label: "not ready while Slack is down" })
      // Slack gave up on these events: they are only in the history (5 in the DM: 3 pages of 2).
      const lost = ["lost 1", "lost 2", "lost 3", "lost 4", "lost 5"]
      for (const text of lost) slack.say({ channel: dm, text, lost: true })
      slack.say({ channel: dm, text: "lost in the thread", threadTs: start.ts, lost: true })
      // This one's event is held and arrives after the reconnect, and it is in the history too.
      slack.say({ channel: dm, text: "held" })
      slack.historyPageSize = 2
      yield* Effect.promise(() => slack.up())

      for (const text of [...lost, "held"]) yield* eventually(() => (repliesTo(dm, text) > 0 ? true : undefined), { label: `the reply to '${text}'` })
      yield* eventually(() => (slack.posted(dm, start.ts).length === 2 ? true : undefined), { label: `the reply in ${thread}` })
      assert.deepStrictEqual(slack.posted(dm, start.ts).map((p) => p.text), ["echo: in the thread", "echo: lost in the thread"])
      // Once each, and the lost ones in the order they were written; the bot's own posts in the history were not taken for users'.
      for (const text of ["start", ...lost, "held"]) assert.strictEqual(repliesTo(dm, text), 1, text)
      const order = slack.posted(dm).filter((p) => p.threadTs === undefined && p.text.startsWith("echo: lost ")).map((p) => p.text.slice(6))
      assert.deepStrictEqual(order, lost)
      assert.isFalse(texts(dm).some((t) => t.startsWith("echo: echo: ")))
      slack.historyPageSize = 100
    }))

  it.scopedLive("a long reply goes out in parts of at most 4,000 characters in the thread; a resend sends only the missing parts; a part left `sending` makes it unknown", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const runtime = runtimeWith()
      const ctx = yield* Layer.build(makeTestHost(hostConfig(dir), { runtimes: [{ plugin: "slack", value: runtime }] }))
      const channel = (yield* Effect.provide(Channels, ctx)).get("sl")!
      const parts = yield* Effect.provide(DeliveryStore, ctx)
      const room = nextChannel()
      const thread = "1800000000.000001"
      const paragraph = (i: number) => `Paragraph ${i}: ` + "lorem ipsum dolor sit amet ".repeat(60).trim()
      const code = "```ts\n" + Array.from({ length: 120 }, (_, i) => `const line${i} = ${i} // (a) [b]`).join("\n") + "\n```"
      const text = [paragraph(1), paragraph(2), code, paragraph(3), paragraph(4)].join("\n\n")
      const expected = splitText(text, MESSAGE_LIMIT)
      assert.isAtLeast(expected.length, 3)
      const delivery = { idempotencyKey: "long-1", conversationId: `sl:${room}/${thread}`, connection: "sl", place: `${room}/${thread}`, kind: "reply" as const, text, previousAttempts: 0 }

      // Part 2 is refused (a 429 longer than a send waits): part 1 is out, the rest is not.
      slack.rateLimitNext("chat.postMessage", 1, 60, 1, room)
      const first = yield* Effect.match(channel.send(delivery), { onSuccess: () => "sent" as const, onFailure: (e) => e })
      assert.notStrictEqual(first, "sent")
      assert.isFalse(isOutcomeUnknown(first))
      assert.strictEqual(slack.posted(room, thread).length, 1)
      yield* channel.send({ ...delivery, previousAttempts: 1 })
      assert.strictEqual(slack.posted(room, thread).length, expected.length)
      for (const p of slack.posted(room)) {
        assert.strictEqual(p.threadTs, thread)
        assert.isAtMost(p.text.length, MESSAGE_LIMIT + 200)
        assert.strictEqual((p.text.match(/```/g) ?? []).length % 2, 0)
      }

      // A crash left part 2 of another delivery `sending`: the resend sends 1 and 3.., never 2, and says so.
      assert.strictEqual(yield* parts.claimPart(partKey("long-2", 2)), "claimed")
      const before = slack.posted(room).length
      const outcome = yield* Effect.match(channel.send({ ...delivery, idempotencyKey: "long-2" }), { onSuccess: () => "sent" as const, onFailure: (e) => e })
      assert.isTrue(isOutcomeUnknown(outcome))
      assert.strictEqual(slack.posted(room).length, before + expected.length - 1)
    }))

  it.scopedLive("a 429 on chat.postMessage is honoured: the retry comes Retry-After later and the reply arrives once", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const runtime = runtimeWith()
      yield* Layer.build(makeTestHost(hostConfig(dir), { runtimes: [{ plugin: "slack", value: runtime }] }))
      const dm = nextChannel("D")
      slack.rateLimitNext("chat.postMessage", 1, 1, 0, dm)
      slack.say({ channel: dm, text: "rate limited" })
      yield* awaitPosts(dm, 1)
      const calls = slack.callTimes("chat.postMessage")
      const i = calls.map((c) => c.limited).lastIndexOf(true)
      assert.isAtLeast(calls[i + 1]!.at - calls[i]!.at, 995)
      assert.strictEqual(repliesTo(dm, "rate limited"), 1)
    }))

  it.scopedLive("a reply whose part a crash left `sending` is not resent: the delivery ends unknown and the user gets a notice", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const runtime = runtimeWith()
      const ctx = yield* Layer.build(makeTestHost(hostConfig(dir), { runtimes: [{ plugin: "slack", value: runtime }] }))
      const deliveries = yield* Effect.provide(DeliveryStore, ctx)
      assert.strictEqual(yield* deliveries.claimPart(partKey("t1:0", 1)), "claimed")
      const dm = nextChannel("D")
      slack.say({ channel: dm, text: "lost in a crash" })
      yield* awaitPosts(dm, 1)
      assert.deepStrictEqual(texts(dm), ["(The assistant restarted while sending a reply; it may be missing here.)"])
      assert.strictEqual((yield* deliveries.countByStatus)["unknown"], 1)
    }))
})


describe("Slack channels with a trigger", () => {
  it.scopedLive("in a channel only triggered messages (the word, an @-mention of the app, a reply in its thread) are answered; the others are context; DMs are always answered", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const runtime = runtimeWith()
      const ctx = yield* Layer.build(makeTestHost(hostConfig(dir, "pynchy"), { executor: contextEcho, runtimes: [{ plugin: "slack", value: runtime }] }))
      const store = yield* Effect.provide(MessageStore, ctx)
      const room = nextChannel()
      slack.say({ channel: room, user: "UANN", text: "lunch at noon?" })
      slack.say({ channel: room, user: "UBOB", text: "I prefer one" })
      yield* eventually(
        store.recent(`sl:${room}` as never, 10).pipe(Effect.map((ms) => ms.filter((m) => m.direction === "in" && m.handledBy !== null).length === 2 ? true : undefined)),
        { label: "the untriggered messages handled" }
      )
      assert.deepStrictEqual(texts(room), [])
      slack.say({ channel: room, user: "UANN", text: `<@${slack.botUserId}> so what time?` })
      yield* awaitPosts(room, 1)
      assert.deepStrictEqual(texts(room), [`context: lunch at noon? | I prefer one; new: <@${slack.botUserId}> so what time?`])
      slack.say({ channel: room, user: "UBOB", text: "Pynchy, thanks" })
      yield* awaitPosts(room, 2)
      assert.match(texts(room)[1]!, /new: Pynchy, thanks$/)
      // A reply in a thread the app started needs no trigger.
      const thread = "1800000999.000001"
      slack.say({ channel: room, user: "UANN", text: "and tomorrow?", threadTs: thread, parentUserId: slack.botUserId })
      yield* eventually(() => (slack.posted(room, thread).length > 0 ? true : undefined), { label: "the reply in the app's thread" })
      const dm = nextChannel("D")
      slack.say({ channel: dm, text: "hi" })
      yield* awaitPosts(dm, 1)
      assert.match(texts(dm)[0]!, /new: hi$/)
    }))
})

describe("Slack runtime in HTTP mode", () => {
  it.scopedLive("a signed event is answered 200 after the commit and replied to; a bad signature gets 401 and nothing is stored; a retried event is a duplicate", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const port = yield* Effect.promise(freePort)
      const runtime = runtimeWith({ mode: "http", appTokenEnv: undefined, signingSecretEnv: "PYNCHY_TEST_SLACK_SIGNING", port })
      const ctx = yield* Layer.build(makeTestHost(hostConfig(dir), { runtimes: [{ plugin: "slack", value: runtime }] }))
      assert.isTrue(Effect.runSync(runtime.isReady))
      const url = `http://127.0.0.1:${port}/slack/events`
      const dm = nextChannel("D")
      const event = (id: string, text: string, ts: string) => ({ type: "event_callback", team_id: "T0001", api_app_id: "A0001", event_id: id, event: { type: "message", channel: dm, channel_type: "im", user: "UUSER001", text, ts } })

      const forged = yield* Effect.promise(() => signedRequest(url, SIGNING_SECRET, event("EvH0", "forged", "1.0"), { badSignature: true }))
      assert.strictEqual(forged.status, 401)
      const ok = yield* Effect.promise(() => signedRequest(url, SIGNING_SECRET, event("EvH1", "over http", "1800000001.000001")))
      assert.strictEqual(ok.status, 200)
      // The 200 came after the commit: the message is stored by now.
      const store = yield* Effect.provide(MessageStore, ctx)
      assert.deepStrictEqual((yield* store.recent(`sl:${dm}` as never, 10)).filter((m) => m.direction === "in").map((m) => m.text), ["over http"])
      yield* awaitPosts(dm, 1)
      const retried = yield* Effect.promise(() => signedRequest(url, SIGNING_SECRET, event("EvH1", "over http", "1800000001.000001"), { retryNum: 1 }))
      assert.strictEqual(retried.status, 200)
      const stale = yield* Effect.promise(() => signedRequest(url, SIGNING_SECRET, event("EvH2", "stale", "1.2"), { timestamp: Math.floor(Date.now() / 1000) - 3600 }))
      assert.strictEqual(stale.status, 401)
      // Signed correctly but from 10 minutes ahead: the skew counts both ways (5 minutes), as in Slack's recipe.
      const future = yield* Effect.promise(() => signedRequest(url, SIGNING_SECRET, event("EvH3", "from the future", "1.3"), { timestamp: Math.floor(Date.now() / 1000) + 600 }))
      assert.strictEqual(future.status, 401)
      // Within the window ahead (clocks drift) is still accepted.
      const ahead = yield* Effect.promise(() => signedRequest(url, SIGNING_SECRET, event("EvH4", "slightly ahead", "1800000001.000004"), { timestamp: Math.floor(Date.now() / 1000) + 60 }))
      assert.strictEqual(ahead.status, 200)
      const url2 = yield* Effect.promise(() => signedRequest(url, SIGNING_SECRET, { type: "url_verification", challenge: "abc123", token: "x" }))
      assert.strictEqual(yield* Effect.promise(() => url2.json() as Promise<unknown>).pipe(Effect.map((b) => (b as { challenge?: string }).challenge)), "abc123")
      assert.deepStrictEqual((yield* store.recent(`sl:${dm}` as never, 10)).filter((m) => m.direction === "in").map((m) => m.text), ["over http", "slightly ahead"])
      yield* awaitPosts(dm, 2)
      assert.deepStrictEqual(texts(dm), ["echo: over http", "echo: slightly ahead"])
    }))
})

describe("Slack settings", () => {
  it("bad settings throw naming the fields; each mode names the secret it needs", () => {
    assert.throws(() => decodeSlackSettings("sl", { kind: "slack", botTokenEnv: "lower case", apiUrl: "ftp://x" }), /connections\.sl: .*botTokenEnv.*apiUrl/)
    assert.throws(() => decodeSlackSettings("sl", { kind: "slack", botTokenEnv: "B" }), /connections\.sl\.appTokenEnv: Socket Mode needs/)
    assert.throws(() => decodeSlackSettings("sl", { kind: "slack", mode: "http", botTokenEnv: "B", port: 3000 }), /connections\.sl\.signingSecretEnv/)
    assert.throws(() => decodeSlackSettings("sl", { kind: "slack", mode: "http", botTokenEnv: "B", signingSecretEnv: "S" }), /connections\.sl\.port/)
    assert.throws(() => decodeSlackSettings("sl", { kind: "slack", botTokenEnv: "B", appTokenEnv: "A", mode: "rtm" }), /connections\.sl: mode/)
  })

  it("a routed slack connection gets a runtime; an unrouted one does not", async () => {
    const { default: plugin } = await import("../../src/channels/slack/plugin.js")
    const base = { dataDir: tempDir(), workspaces: [{ id: "main" }], connections: { sl: { kind: "slack", botTokenEnv: "SLACK_BOT_TOKEN", appTokenEnv: "SLACK_APP_TOKEN" } } }
    const none = Either.getOrThrow(decodeConfig({ ...base, routes: [] }, "t"))
    const one = Either.getOrThrow(decodeConfig({ ...base, routes: [{ connection: "sl", place: "*", workspace: "main" }] }, "t"))
    const runtimesOf = (config: typeof none) =>
      plugin.connectionRuntime({ config, connectionConfig: (n: string) => (config.connections as Record<string, Record<string, unknown>>)[n] }) as Promise<ReadonlyArray<{ name: string }>>
    assert.deepStrictEqual(await runtimesOf(none), [])
    assert.strictEqual((await runtimesOf(one))[0]!.name, "sl")
  })
})
