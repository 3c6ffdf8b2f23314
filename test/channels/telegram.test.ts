/**
 * The Telegram connection runtime against the telegram-test-api emulator (test/support/telegram.ts):
 * replies, typing, the durable offset, 429 honoured, bad updates refused without harm, an outage
 * with catch-up, and long replies in parts whose resend sends only the missing ones.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Layer, Option } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll } from "vitest"
import { makeTestHost } from "../../layers/test.js"
import { partKey } from "../../src/channels/parts.js"
import { splitText } from "../../src/channels/split.js"
import { decodeTelegramSettings } from "../../src/channels/telegram/settings.js"
import { MESSAGE_LIMIT, makeTelegramRuntime, UPDATES_STREAM } from "../../src/channels/telegram/TelegramRuntime.js"
import { decodeConfig } from "../../src/config/HostConfig.js"
import { DeliveryStore } from "../../src/db/DeliveryStore.js"
import { MessageStore } from "../../src/db/MessageStore.js"
import { ConnectionName } from "../../src/domain/ids.js"
import { isOutcomeUnknown } from "../../src/contracts/channel.js"
import { Channels } from "../../src/pipeline/Channels.js"
import { tempDir } from "../support/db.js"
import { eventually } from "../support/eventually.js"
import { streamingExecutor } from "../support/streaming.js"
import { startTelegram, type Telegram, telegramHostConfig } from "../support/telegram.js"
import { skipWithout } from "../support/system.js"
import { decodedSeconds } from "../speech/support.js"
import { contextEcho } from "../support/context-echo.js"

let tg: Telegram
beforeAll(async () => {
  tg = await startTelegram()
})
afterAll(() => tg.stop())

let chats = 100
const nextChat = () => ++chats

const runtimeIn = (dir: string, extra: Record<string, unknown> = {}) => {
  fs.writeFileSync(path.join(dir, "tg.token"), tg.token + "\n", { mode: 0o600 })
  const settings = decodeTelegramSettings("tg", { kind: "telegram", tokenFile: "tg.token", apiRoot: tg.apiRoot, pollTimeoutSeconds: 1, maxBackoffMs: 200, ...extra })
  return makeTelegramRuntime({ name: "tg", settings, dataDir: dir })
}

/** The call after the last 429 of `method` came at least `ms` later (a lower bound: never flaky). */
const assertWaited = (method: string, ms: number) => {
  const calls = tg.callTimes(method)
  const i = calls.map((c) => c.flooded).lastIndexOf(true)
  assert.isAtLeast(i, 0, `a 429 for ${method}`)
  assert.isAtLeast(calls[i + 1]!.at - calls[i]!.at, ms - 5, `${method} waited retry_after`)
}

const repliesTo = (chatId: number, text: string) => tg.sent(chatId).filter((t) => t === `echo: ${text}`).length
const awaitReply = (chatId: number, text: string) =>
  eventually(() => (repliesTo(chatId, text) > 0 ? true : undefined), { label: `the reply to '${text}' in chat ${chatId}` })

describe("Telegram runtime against the emulator", () => {
  it.scopedLive("a voice workspace's reply comes as text, then a voice note (OGG/Opus) whose audio decodes to more than 0 seconds, longer for a longer text", () =>
    Effect.gen(function* () {
      if (skipWithout("espeak-ng", "apt-get install espeak-ng") || skipWithout("opusenc", "apt-get install opus-tools") || skipWithout("sox", "apt-get install sox")) return
      const dir = tempDir()
      const config = Either.getOrThrow(decodeConfig({
        dataDir: dir,
        workspaces: [{ id: "main", instructions: "test", voice: { enabled: true, voice: "en" } }],
        routes: [{ connection: "tg", place: "*", workspace: "main" }],
        connections: {},
        limits: { runtimeReadyTimeoutMs: 20_000, readinessCheckMs: 100 }
      }, "test config"))
      const ctx = yield* Layer.build(makeTestHost(config, { runtimes: [{ plugin: "telegram", value: runtimeIn(dir) }] }))
      const ada = tg.user({ chatId: nextChat() })
      const seconds: Array<number> = []
      for (const text of ["hi", "a much longer message than the first, so that its spoken reply lasts a good deal longer"]) {
        yield* Effect.promise(() => ada.say(text))
        yield* awaitReply(ada.chatId, text)
        const voice = yield* eventually(() => tg.voices(ada.chatId)[seconds.length], { label: "a voice note" })
        seconds.push(decodedSeconds(voice, "ogg_opus"))
      }
      assert.isAbove(seconds[0]!, 0)
      assert.isAbove(seconds[1]!, seconds[0]!)
      assert.strictEqual(tg.voices(ada.chatId).length, 2)
      // A resend of a delivery (as after a crash) sends neither its text nor its audio again: both are claimed parts.
      const channel = yield* Effect.map(Channels, (c) => c.get("tg")).pipe(Effect.provide(ctx))
      assert.strictEqual(channel?.audio, "ogg_opus")
      const delivery = { idempotencyKey: "voice-resend", conversationId: `tg:${ada.chatId}`, connection: "tg", place: String(ada.chatId), kind: "reply" as const, text: "spoken once", previousAttempts: 0, audio: { format: "ogg_opus" as const, mimeType: "audio/ogg", bytes: tg.voices(ada.chatId)[0]! } }
      yield* channel!.send(delivery)
      yield* channel!.send({ ...delivery, previousAttempts: 1 })
      assert.strictEqual(tg.voices(ada.chatId).length, 3)
      assert.strictEqual(tg.sent(ada.chatId).filter((t) => t === "spoken once").length, 1)
    }))

  it.scopedLive("a direct message gets the reply; the offset is the durable cursor; the bot is typing while the turn runs", () =>
    Effect.gen(function* () {
      let release!: () => void
      const held = new Promise<void>((resolve) => (release = resolve))
      const dir = tempDir()
      const runtime = runtimeIn(dir)
      const ctx = yield* Layer.build(makeTestHost(telegramHostConfig(dir), { executor: streamingExecutor({ hold: () => held }), runtimes: [{ plugin: "telegram", value: runtime }] }))
      assert.isTrue(Effect.runSync(runtime.isReady))
      const ada = tg.user({ chatId: nextChat() })
      yield* Effect.promise(() => ada.say("hello there"))
      yield* eventually(() => (tg.chatActions(ada.chatId).includes("typing") ? true : undefined), { label: "the bot typing" })
      assert.strictEqual(repliesTo(ada.chatId, "hello there"), 0)
      release()
      yield* awaitReply(ada.chatId, "hello there")
      const cursor = yield* Effect.flatMap(MessageStore, (s) => s.cursor(ConnectionName.make("tg"), UPDATES_STREAM)).pipe(Effect.provide(ctx))
      assert.isTrue(Option.isSome(cursor) && Number(cursor.value.position) > 0)
      const raw = tg.sentRaw(ada.chatId)
      assert.strictEqual(raw.at(-1)!.parseMode, "MarkdownV2")
      assert.strictEqual(raw.at(-1)!.text, "echo: hello there")
    }))

  it.scopedLive("a 429 is honoured: getUpdates and sendMessage wait retry_after, then every reply arrives once", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const runtime = runtimeIn(dir)
      yield* Layer.build(makeTestHost(telegramHostConfig(dir), { runtimes: [{ plugin: "telegram", value: runtime }] }))
      const bo = tg.user({ chatId: nextChat() })
      const sendsBefore = tg.calls("sendMessage")
      tg.floodNext("sendMessage", 1, 1)
      yield* Effect.promise(() => bo.say("flooded reply"))
      yield* awaitReply(bo.chatId, "flooded reply")
      // The 429 answer and the retry after it.
      assert.strictEqual(tg.calls("sendMessage") - sendsBefore, 2)
      assertWaited("sendMessage", 1_000)
      tg.floodNext("getUpdates", 2, 1)
      yield* Effect.promise(() => bo.say("after a flooded poll"))
      yield* awaitReply(bo.chatId, "after a flooded poll")
      assertWaited("getUpdates", 1_000)
      assert.strictEqual(repliesTo(bo.chatId, "flooded reply"), 1)
      assert.strictEqual(repliesTo(bo.chatId, "after a flooded poll"), 1)
    }))

  it.scopedLive("malformed and unknown updates, texts over the limit and bots are refused without harm; the loop goes on", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const runtime = runtimeIn(dir, { maxInboundChars: 1_000 })
      const ctx = yield* Layer.build(makeTestHost(telegramHostConfig(dir), { runtimes: [{ plugin: "telegram", value: runtime }] }))
      const cy = tg.user({ chatId: nextChat() })
      const chat = { id: cy.chatId, type: "private" }
      tg.inject({ edited_message: { message_id: 1, chat, text: "edited" } })
      tg.inject({ message: { message_id: 2, chat, from: { id: cy.chatId }, sticker: { file_id: "x" } } })
      tg.inject({ message: { message_id: "three", chat, text: 42 } })
      tg.inject({ update_id: "not a number", message: { text: "no id" } })
      tg.inject({ message: { message_id: 4, chat, from: { id: 999, is_bot: true }, text: "from a bot" } })
      yield* Effect.promise(() => cy.say("x".repeat(1_001)))
      yield* Effect.promise(() => cy.say("still here"))
      yield* awaitReply(cy.chatId, "still here")
      assert.isTrue(Effect.runSync(runtime.isReady))
      const messages = yield* Effect.flatMap(MessageStore, (s) => s.recent(`tg:${cy.chatId}` as never, 50)).pipe(Effect.provide(ctx))
      assert.deepStrictEqual(messages.filter((m) => m.direction === "in").map((m) => m.text), ["still here"])
    }))

  it.scopedLive("isReady is false while the Bot API is unreachable and true again; messages sent meanwhile are answered once", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const runtime = runtimeIn(dir)
      yield* Layer.build(makeTestHost(telegramHostConfig(dir), { runtimes: [{ plugin: "telegram", value: runtime }] }))
      const di = tg.user({ chatId: nextChat() })
      yield* Effect.promise(() => di.say("before"))
      yield* awaitReply(di.chatId, "before")
      yield* Effect.promise(() => tg.down())
      yield* eventually(() => (Effect.runSync(runtime.isReady) ? undefined : true), { label: "not ready while the Bot API is down" })
      const during = ["during 1", "during 2", "during 3"]
      for (const t of during) yield* Effect.promise(() => di.say(t))
      yield* Effect.promise(() => tg.up())
      yield* eventually(() => (Effect.runSync(runtime.isReady) ? true : undefined), { label: "ready again" })
      yield* Effect.promise(() => di.say("after"))
      for (const t of [...during, "after"]) yield* awaitReply(di.chatId, t)
      for (const t of ["before", ...during, "after"]) assert.strictEqual(repliesTo(di.chatId, t), 1, t)
    }))

  it.scopedLive("a long reply goes out in parts of at most 4,096 characters; a resend sends only the missing parts", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const runtime = runtimeIn(dir)
      const ctx = yield* Layer.build(makeTestHost(telegramHostConfig(dir), { runtimes: [{ plugin: "telegram", value: runtime }] }))
      const channel = (yield* Effect.provide(Channels, ctx)).get("tg")!
      const parts = yield* Effect.provide(DeliveryStore, ctx)
      const chatId = nextChat()
      const paragraph = (i: number) => `Paragraph ${i}: ` + "lorem ipsum dolor sit amet ".repeat(60).trim()
      const code = "```ts\n" + Array.from({ length: 120 }, (_, i) => `const line${i} = ${i} // (a) [b] *c*`).join("\n") + "\n```"
      const text = [paragraph(1), paragraph(2), code, paragraph(3), paragraph(4)].join("\n\n")
      const expected = splitText(text, MESSAGE_LIMIT)
      assert.isAtLeast(expected.length, 3)
      const delivery = { idempotencyKey: "long-1", conversationId: `tg:${chatId}`, connection: "tg", place: String(chatId), kind: "reply" as const, text, previousAttempts: 0 }

      // Part 2 is refused (a 429 longer than a send waits): part 1 is out, the rest is not.
      tg.floodNext("sendMessage", 1, 60, 1)
      const first = yield* Effect.match(channel.send(delivery), { onSuccess: () => "sent" as const, onFailure: (e) => e })
      assert.notStrictEqual(first, "sent")
      assert.isFalse(isOutcomeUnknown(first))
      assert.deepStrictEqual(tg.sent(chatId), expected.slice(0, 1))
      // The resend sends parts 2.. only.
      yield* channel.send({ ...delivery, previousAttempts: 1 })
      assert.deepStrictEqual(tg.sent(chatId), expected)
      for (const part of tg.sent(chatId)) assert.isAtMost(part.length, MESSAGE_LIMIT)
      // Each part renders on its own: the cut code block is fenced again.
      for (const part of tg.sent(chatId)) assert.strictEqual((part.match(/```/g) ?? []).length % 2, 0)

      // A crash left part 2 of another delivery `sending`: the resend sends 1 and 3.., never 2, and says so.
      const crashed = { ...delivery, idempotencyKey: "long-2", previousAttempts: 1 }
      assert.strictEqual(yield* parts.claimPart(partKey("long-2", 2)), "claimed")
      const before = tg.sent(chatId).length
      const outcome = yield* Effect.match(channel.send(crashed), { onSuccess: () => "sent" as const, onFailure: (e) => e })
      assert.isTrue(isOutcomeUnknown(outcome))
      assert.deepStrictEqual(tg.sent(chatId).slice(before), [expected[0], ...expected.slice(2)])
      // Resent again (another restart): nothing more goes out.
      yield* Effect.ignore(channel.send(crashed))
      assert.strictEqual(tg.sent(chatId).length, before + expected.length - 1)
    }))
})


describe("Telegram sends whose outcome is unknown", () => {
  it.scopedLive("a reply whose part a crash left `sending` is not resent: the delivery ends unknown and the user gets a notice", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const runtime = runtimeIn(dir)
      const ctx = yield* Layer.build(makeTestHost(telegramHostConfig(dir), { runtimes: [{ plugin: "telegram", value: runtime }] }))
      const deliveries = yield* Effect.provide(DeliveryStore, ctx)
      // As a crash between the claim and the answer leaves it: the first reply (turn 1, reply 0), part 1.
      assert.strictEqual(yield* deliveries.claimPart(partKey("t1:0", 1)), "claimed")
      const ed = tg.user({ chatId: nextChat() })
      yield* Effect.promise(() => ed.say("lost in a crash"))
      yield* eventually(() => (tg.sent(ed.chatId).length > 0 ? true : undefined), { label: "the notice" })
      assert.deepStrictEqual(tg.sent(ed.chatId), ["(The assistant restarted while sending a reply; it may be missing here.)"])
      const counts = yield* deliveries.countByStatus
      assert.strictEqual(counts["unknown"], 1)
    }))
})

describe("Telegram group chats", () => {
  it.scopedLive("in a group only triggered messages are answered; the others are stored and given as context to the next turn; direct messages are always answered", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const runtime = runtimeIn(dir)
      const config = Either.getOrThrow(decodeConfig({
        dataDir: dir,
        workspaces: [{ id: "main", instructions: "test" }],
        routes: [{ connection: "tg", place: "*", workspace: "main", trigger: "@pynchy" }],
        connections: {},
        limits: { runtimeReadyTimeoutMs: 20_000, readinessCheckMs: 100 }
      }, "test config"))
      const ctx = yield* Layer.build(makeTestHost(config, { executor: contextEcho, runtimes: [{ plugin: "telegram", value: runtime }] }))
      const store = yield* Effect.provide(MessageStore, ctx)
      const group = -nextChat()
      const ann = tg.user({ chatId: group, userId: 501, userName: "ann", type: "group" })
      const bob = tg.user({ chatId: group, userId: 502, userName: "bob", type: "group" })
      yield* Effect.promise(() => ann.say("lunch at noon?"))
      yield* Effect.promise(() => bob.say("I prefer one"))
      // Both stored and handled by a turn that ran no agent.
      yield* eventually(
        store.recent(`tg:${group}` as never, 10).pipe(Effect.map((ms) => ms.filter((m) => m.direction === "in" && m.handledBy !== null).length === 2 ? true : undefined)),
        { label: "the untriggered messages handled" }
      )
      assert.deepStrictEqual(tg.sent(group), [])
      yield* Effect.promise(() => ann.say("@pynchy so what time?"))
      yield* eventually(() => (tg.sent(group).length > 0 ? true : undefined), { label: "the reply to the triggered message" })
      assert.deepStrictEqual(tg.sent(group), ["context: lunch at noon? | I prefer one; new: @pynchy so what time?"])
      // The trigger is a word, any case: "@Pynchy," counts, "@pynchyfan" does not.
      yield* Effect.promise(() => bob.say("ask @pynchyfan"))
      yield* Effect.promise(() => bob.say("@Pynchy, thanks"))
      yield* eventually(() => (tg.sent(group).length > 1 ? true : undefined), { label: "the second reply" })
      assert.match(tg.sent(group)[1]!, /new: (ask @pynchyfan \| )?@Pynchy, thanks$/)
      yield* Effect.sync(() => assert.strictEqual(tg.sent(group).length, 2))
      // A direct message needs no trigger.
      const dm = tg.user({ chatId: nextChat() })
      yield* Effect.promise(() => dm.say("hi"))
      yield* eventually(() => (tg.sent(dm.chatId).length > 0 ? true : undefined), { label: "the direct reply" })
      assert.match(tg.sent(dm.chatId)[0]!, /new: hi$/)
    }))
})

describe("Telegram settings", () => {
  it("bad settings throw naming the fields; exactly one credential", () => {
    assert.throws(() => decodeTelegramSettings("tg", { kind: "telegram", tokenEnv: "lower case", apiRoot: "ftp://x" }), /connections\.tg: .*tokenEnv.*apiRoot|connections\.tg: .*apiRoot/)
    assert.throws(() => decodeTelegramSettings("tg", { kind: "telegram" }), /connections\.tg\.tokenEnv: give exactly one/)
    assert.throws(() => decodeTelegramSettings("tg", { kind: "telegram", tokenEnv: "A", tokenFile: "f" }), /tokenEnv\|tokenFile/)
  })

  it("a routed telegram connection gets a runtime; an unrouted one does not", async () => {
    const { default: plugin } = await import("../../src/channels/telegram/plugin.js")
    const base = { dataDir: tempDir(), workspaces: [{ id: "main" }], connections: { tg: { kind: "telegram", tokenEnv: "TG_TOKEN" } } }
    const none = Either.getOrThrow(decodeConfig({ ...base, routes: [] }, "t"))
    const one = Either.getOrThrow(decodeConfig({ ...base, routes: [{ connection: "tg", place: "*", workspace: "main" }] }, "t"))
    const runtimesOf = (config: typeof none) =>
      plugin.connectionRuntime({ config, connectionConfig: (n: string) => (config.connections as Record<string, Record<string, unknown>>)[n] }) as Promise<ReadonlyArray<{ name: string }>>
    assert.deepStrictEqual(await runtimesOf(none), [])
    assert.strictEqual((await runtimesOf(one))[0]!.name, "tg")
  })
})
