/**
 * The Telegram connection in `mode: webhook` against the emulator's front (test/support/telegram.ts),
 * which registers webhooks and POSTs each pending update to the url with the secret token as the
 * Bot API does, keeping an update until the url answers 2xx. Requests Telegram would never send
 * (a wrong secret, a malformed or oversized body, a redelivery after a lost 200) are posted to the
 * listener by the test itself.
 */
import { assert, describe, it } from "@effect/vitest"
import { type Context, Effect, Either, Exit, Layer, Option, Scope } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll } from "vitest"
import { makeTestHost } from "../../layers/test.js"
import { decodeTelegramSettings } from "../../src/channels/telegram/settings.js"
import { makeTelegramRuntime, UPDATES_STREAM, WEBHOOK_STREAM } from "../../src/channels/telegram/TelegramRuntime.js"
import { MessageStore } from "../../src/db/MessageStore.js"
import { ConnectionName } from "../../src/domain/ids.js"
import { tempDir } from "../support/db.js"
import { eventually } from "../support/eventually.js"
import { freePort, startTelegram, type Telegram, telegramHostConfig } from "../support/telegram.js"

let tg: Telegram
beforeAll(async () => {
  tg = await startTelegram(undefined, { webhookRetryMs: 50 })
})
afterAll(() => tg.stop())

let chats = 300
const nextChat = () => ++chats
const SECRET = "s3cret_webhook-token"

interface Hook {
  readonly url: string
  readonly port: number
}
const newHook = async (): Promise<Hook> => {
  const port = await freePort()
  return { port, url: `http://127.0.0.1:${port}/telegram/tg` }
}

const settingsIn = (dir: string, mode: "polling" | "webhook", hook: Hook, extra: Record<string, unknown> = {}) => {
  fs.writeFileSync(path.join(dir, "tg.token"), tg.token + "\n", { mode: 0o600 })
  fs.writeFileSync(path.join(dir, "tg.secret"), SECRET + "\n", { mode: 0o600 })
  return decodeTelegramSettings("tg", {
    kind: "telegram",
    tokenFile: "tg.token",
    apiRoot: tg.apiRoot,
    mode,
    pollTimeoutSeconds: 1,
    maxBackoffMs: 200,
    webhook: { url: hook.url, listen: { port: hook.port }, secretTokenFile: "tg.secret", maxBodyBytes: 4_096, ...extra }
  })
}

/** A host with the Telegram runtime in `mode`, in a scope of its own (closed to stop it, as a host going down). */
const startHostIn = (dir: string, mode: "polling" | "webhook", hook: Hook) =>
  Effect.gen(function* () {
    const runtime = makeTelegramRuntime({ name: "tg", settings: settingsIn(dir, mode, hook), dataDir: dir })
    const scope = yield* Scope.make()
    const ctx = yield* Layer.buildWithScope(makeTestHost(telegramHostConfig(dir), { runtimes: [{ plugin: "telegram", value: runtime }] }), scope)
    return { runtime, ctx, stop: Scope.close(scope, Exit.void) }
  })

const repliesTo = (chatId: number, text: string) => tg.sent(chatId).filter((t) => t === `echo: ${text}`).length
const awaitReply = (chatId: number, text: string) =>
  eventually(() => (repliesTo(chatId, text) > 0 ? true : undefined), { label: `the reply to '${text}' in chat ${chatId}` })

const post = (hook: Hook, body: string, headers: Record<string, string> = { "x-telegram-bot-api-secret-token": SECRET }, url = hook.url, method = "POST") =>
  Effect.promise(() => fetch(url, { method, headers: { "content-type": "application/json", ...headers }, ...(method === "POST" ? { body } : {}) }).then(async (r) => {
    await r.arrayBuffer()
    return r.status
  }))

const inbound = (ctx: Context.Context<MessageStore>, chatId: number) =>
  Effect.flatMap(MessageStore, (s) => s.recent(`tg:${chatId}` as never, 50)).pipe(
    Effect.map((ms) => ms.filter((m) => m.direction === "in").map((m) => m.text)),
    Effect.provide(ctx)
  )

describe("Telegram webhook mode against the emulator", () => {
  it.scopedLive("setWebhook registers the url and secret; a message is posted to the listener, stored, and answered; no getUpdates", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const hook = yield* Effect.promise(newHook)
      const polls = tg.calls("getUpdates")
      const host = yield* startHostIn(dir, "webhook", hook)
      yield* Effect.addFinalizer(() => host.stop)
      assert.isTrue(Effect.runSync(host.runtime.isReady))
      assert.deepStrictEqual(tg.webhook(), { url: hook.url, secret: SECRET })
      const ada = tg.user({ chatId: nextChat() })
      yield* Effect.promise(() => ada.say("hello by webhook"))
      yield* awaitReply(ada.chatId, "hello by webhook")
      assert.deepStrictEqual(yield* inbound(host.ctx, ada.chatId), ["hello by webhook"])
      const cursor = yield* Effect.flatMap(MessageStore, (s) => s.cursor(ConnectionName.make("tg"), WEBHOOK_STREAM)).pipe(Effect.provide(host.ctx))
      assert.isTrue(Option.isSome(cursor) && Number(cursor.value.position) > 0)
      assert.strictEqual(tg.calls("getUpdates"), polls)
    }))

  it.scopedLive("a wrong or missing secret gets 401 and nothing is stored; malformed 400, oversized 413, other paths 404, GET 405; the listener goes on", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const hook = yield* Effect.promise(newHook)
      const host = yield* startHostIn(dir, "webhook", hook)
      yield* Effect.addFinalizer(() => host.stop)
      const chatId = nextChat()
      const forged = JSON.stringify({ update_id: 9_000_001, message: { message_id: 1, chat: { id: chatId, type: "private" }, from: { id: chatId }, text: "forged" } })
      assert.strictEqual(yield* post(hook, forged, { "x-telegram-bot-api-secret-token": "not-the-secret" }), 401)
      assert.strictEqual(yield* post(hook, forged, {}), 401)
      assert.strictEqual(yield* post(hook, "{not json"), 400)
      assert.strictEqual(yield* post(hook, JSON.stringify({ message: { text: "no update id" } })), 400)
      assert.strictEqual(yield* post(hook, JSON.stringify([1, 2])), 400)
      assert.strictEqual(yield* post(hook, JSON.stringify({ update_id: 9_000_002, message: { message_id: 2, chat: { id: chatId, type: "private" }, text: "x".repeat(5_000) } })), 413)
      assert.strictEqual(yield* post(hook, forged, undefined, hook.url.replace("/telegram/tg", "/elsewhere")), 404)
      assert.strictEqual(yield* post(hook, "", undefined, hook.url, "GET"), 405)
      // An update of a type the runtime does not read is answered 200 (or Telegram would retry it forever) and skipped.
      assert.strictEqual(yield* post(hook, JSON.stringify({ update_id: 9_000_003, edited_message: { message_id: 3, chat: { id: chatId, type: "private" }, text: "edited" } })), 200)
      const user = tg.user({ chatId })
      yield* Effect.promise(() => user.say("the real one"))
      yield* awaitReply(chatId, "the real one")
      assert.isTrue(Effect.runSync(host.runtime.isReady))
      assert.deepStrictEqual(yield* inbound(host.ctx, chatId), ["the real one"])
      assert.strictEqual(repliesTo(chatId, "forged"), 0)
    }))

  it.scopedLive("an update delivered again (its 200 lost) is a duplicate of its receipt: one message, one reply", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const hook = yield* Effect.promise(newHook)
      const host = yield* startHostIn(dir, "webhook", hook)
      yield* Effect.addFinalizer(() => host.stop)
      const bo = tg.user({ chatId: nextChat() })
      yield* Effect.promise(() => bo.say("only once"))
      yield* awaitReply(bo.chatId, "only once")
      const update = tg.webhookDelivered().find((u) => (u["message"] as { text?: string } | undefined)?.text === "only once")!
      assert.strictEqual(yield* post(hook, JSON.stringify(update)), 200)
      assert.strictEqual(yield* post(hook, JSON.stringify(update)), 200)
      yield* Effect.promise(() => bo.say("sentinel"))
      yield* awaitReply(bo.chatId, "sentinel")
      assert.strictEqual(repliesTo(bo.chatId, "only once"), 1)
      assert.deepStrictEqual(yield* inbound(host.ctx, bo.chatId), ["only once", "sentinel"])
    }))

  it.scopedLive("while the host is down Telegram keeps the updates and retries (pending and the last error in getWebhookInfo); back up, each is answered once", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const hook = yield* Effect.promise(newHook)
      const first = yield* startHostIn(dir, "webhook", hook)
      const cy = tg.user({ chatId: nextChat() })
      yield* Effect.promise(() => cy.say("before"))
      yield* awaitReply(cy.chatId, "before")
      yield* first.stop
      const during = ["during 1", "during 2", "during 3"]
      for (const t of during) yield* Effect.promise(() => cy.say(t))
      const info = yield* eventually(
        Effect.promise(() => fetch(`${tg.apiRoot}/bot${tg.token}/getWebhookInfo`).then((r) => r.json() as Promise<{ result: { pending_update_count: number; last_error_message?: string } }>)).pipe(
          Effect.map((r) => (r.result.pending_update_count >= during.length && r.result.last_error_message !== undefined ? r.result : undefined))
        ),
        { label: "the webhook's failed deliveries in getWebhookInfo" }
      )
      assert.match(info.last_error_message!, /Connection failed/)
      const second = yield* startHostIn(dir, "webhook", hook)
      yield* Effect.addFinalizer(() => second.stop)
      for (const t of during) yield* awaitReply(cy.chatId, t)
      for (const t of ["before", ...during]) assert.strictEqual(repliesTo(cy.chatId, t), 1, t)
    }))

  it.scopedLive("switching modes: polling deletes the webhook (keeping its pending updates) and reads them; webhook mode registers it again", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const hook = yield* Effect.promise(newHook)
      const asWebhook = yield* startHostIn(dir, "webhook", hook)
      const di = tg.user({ chatId: nextChat() })
      yield* Effect.promise(() => di.say("by webhook"))
      yield* awaitReply(di.chatId, "by webhook")
      yield* asWebhook.stop
      // Sent while no host runs and the webhook is still set: Telegram holds them.
      for (const t of ["held 1", "held 2"]) yield* Effect.promise(() => di.say(t))
      const deletes = tg.calls("deleteWebhook")
      const asPolling = yield* startHostIn(dir, "polling", hook)
      assert.strictEqual(tg.calls("deleteWebhook"), deletes + 1)
      assert.isUndefined(tg.webhook())
      for (const t of ["held 1", "held 2"]) yield* awaitReply(di.chatId, t)
      yield* Effect.promise(() => di.say("by polling"))
      yield* awaitReply(di.chatId, "by polling")
      const polled = yield* Effect.flatMap(MessageStore, (s) => s.cursor(ConnectionName.make("tg"), UPDATES_STREAM)).pipe(Effect.provide(asPolling.ctx))
      assert.isTrue(Option.isSome(polled))
      yield* asPolling.stop
      // A restart in polling mode with no webhook set deletes nothing.
      const again = yield* startHostIn(dir, "polling", hook)
      yield* again.stop
      assert.strictEqual(tg.calls("deleteWebhook"), deletes + 1)
      const back = yield* startHostIn(dir, "webhook", hook)
      yield* Effect.addFinalizer(() => back.stop)
      assert.deepStrictEqual(tg.webhook(), { url: hook.url, secret: SECRET })
      yield* Effect.promise(() => di.say("webhook again"))
      yield* awaitReply(di.chatId, "webhook again")
      for (const t of ["by webhook", "held 1", "held 2", "by polling", "webhook again"]) assert.strictEqual(repliesTo(di.chatId, t), 1, t)
    }))
})

describe("Telegram webhook settings", () => {
  const base = { kind: "telegram", tokenEnv: "TG_TOKEN" }
  const webhook = { url: "https://bot.example.org/tg", listen: { port: 8443 }, secretTokenEnv: "TG_WEBHOOK_SECRET" }
  it("webhook mode needs its url, listen port and exactly one secret; http:// only with another Bot API server", () => {
    assert.strictEqual(decodeTelegramSettings("tg", base).mode, "polling")
    assert.strictEqual(decodeTelegramSettings("tg", { ...base, mode: "webhook", webhook }).webhook?.listen.host, "127.0.0.1")
    assert.throws(() => decodeTelegramSettings("tg", { ...base, mode: "webhook" }), /^connections\.tg\.webhook: webhook mode needs webhook\.url/)
    assert.throws(() => decodeTelegramSettings("tg", { ...base, mode: "webhook", webhook: { listen: { port: 8443 }, secretTokenEnv: "S" } }), /connections\.tg: webhook\.url: missing/)
    assert.throws(() => decodeTelegramSettings("tg", { ...base, mode: "webhook", webhook: { url: "https://x/tg", secretTokenEnv: "S" } }), /webhook\.listen: missing/)
    assert.throws(() => decodeTelegramSettings("tg", { ...base, mode: "webhook", webhook: { ...webhook, secretTokenEnv: undefined } }), /^connections\.tg\.webhook\.secretTokenEnv: give exactly one of secretTokenEnv, secretTokenFile/)
    assert.throws(() => decodeTelegramSettings("tg", { ...base, mode: "webhook", webhook: { ...webhook, secretTokenFile: "f" } }), /webhook\.secretTokenEnv\|secretTokenFile: give exactly one/)
    assert.throws(() => decodeTelegramSettings("tg", { ...base, mode: "webhook", webhook: { ...webhook, url: "http://bot.example.org/tg" } }), /^connections\.tg\.webhook\.url: Telegram posts to https:\/\/ URLs only/)
    assert.strictEqual(decodeTelegramSettings("tg", { ...base, apiRoot: "http://127.0.0.1:8081", mode: "webhook", webhook: { ...webhook, url: "http://127.0.0.1:9000/tg" } }).webhook?.url, "http://127.0.0.1:9000/tg")
    assert.throws(() => decodeTelegramSettings("tg", { ...base, mode: "sometimes" }), /connections\.tg: mode:/)
    assert.throws(() => decodeTelegramSettings("tg", { ...base, mode: "webhook", webhook: { ...webhook, path: "no-slash", listen: { port: 0 } } }), /webhook\.listen\.port.*|webhook\.path/)
  })

  it.scopedLive("a secret Telegram would refuse fails the start naming the setting", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const hook = yield* Effect.promise(newHook)
      const settings = settingsIn(dir, "webhook", hook)
      fs.writeFileSync(path.join(dir, "tg.secret"), "has spaces and ; \n")
      const runtime = makeTelegramRuntime({ name: "tg", settings, dataDir: dir })
      const built = yield* Effect.either(Layer.build(makeTestHost(telegramHostConfig(dir), { runtimes: [{ plugin: "telegram", value: runtime }] })))
      assert.isTrue(Either.isLeft(built))
      assert.match(String(Either.isLeft(built) ? (built.left as { message?: string }).message ?? JSON.stringify(built.left) : ""), /connections\.tg\.webhook\.secretTokenFile: the secret must be/)
    }))
})
