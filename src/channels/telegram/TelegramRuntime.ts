/**
 * The Telegram connection runtime: one per named `kind: telegram` connection with an enabled route.
 *
 * - A getUpdates long-poll loop through grammy's Api. The `offset` is the durable cursor (stream
 *   `updates`, position = the next offset), advanced in the ingest transaction of each message,
 *   so a crash replays at most the updates after the last committed one; the receipt (update id,
 *   chat, message) deduplicates them. Telegram keeps unconfirmed updates for 24 hours: a host that
 *   was down catches up from its offset.
 * - Text messages of routed chats (not from bots) are ingested; other update types, messages
 *   without text, malformed updates and texts over `maxInboundChars` are skipped and logged. In
 *   a group, a message that neither uses the route's trigger nor mentions the bot is ingested as
 *   context only (../triggers.ts).
 * - Replies go out as MarkdownV2 (plain text if Telegram refuses the entities), cut at 4,096
 *   characters into parts sent under their own keys (../parts.ts): Telegram has no idempotent
 *   send, so a part whose outcome is unknown after a crash is never resent; the delivery ends
 *   `unknown` and the user gets a notice. 429 answers are retried after `retry_after`.
 * - A photo or document (its caption as the text) is downloaded (getFile, capped at `files.maxBytes`)
 *   and handed to ingest, which saves it in the workspace inbox; one past `files:` (size known
 *   from Telegram, type) or that cannot be downloaded is not fetched and is named to the agent as
 *   refused. The files of a reply (the agent's outbox) go out as documents after its text.
 * - While a turn of a chat runs, the bot shows as typing there (renewed every 4 s).
 * - isReady is true after a successful getUpdates and false from a failed one until the next
 *   success (exponential backoff capped at `maxBackoffMs`, or `retry_after` on a 429).
 * - Polling starts by asking getWebhookInfo: a webhook left set (Telegram refuses getUpdates
 *   while one is) is deleted, keeping its pending updates, and the first poll after it reads
 *   every unconfirmed update, whatever the stored offset. A 409 from getUpdates asks again.
 *
 * The first start of a connection (no cursor yet) begins from "now": pending updates are dropped.
 *
 * `mode: webhook` (./webhook.ts): the listener is up first, then setWebhook registers
 * `webhook.url` (secret token, `message` updates only, pending updates kept, one connection so
 * updates arrive in order), retried with the same backoff; it is checked with getWebhookInfo every
 * minute and registered again if the url changed. Each update goes through the same ingest and is
 * answered 200 only after its commit, so an update not stored is delivered again by Telegram and
 * one stored twice is a duplicate of its receipt. Its cursor is the stream `webhook` (the last
 * update id + 1, for `pynchy status`); the polling cursor is left as it was. isReady is true once
 * the listener is up and the webhook registered, false while a registration or check fails.
 * Stopping the host leaves the webhook set: Telegram keeps the updates (24 hours) and retries.
 */
import { Cause, Duration, Effect, FiberMap, Schedule, Schema } from "effect"
import { FilesConfig } from "../../config/files.js"
import type { DeliveryStore } from "../../db/DeliveryStore.js"
import { mimeTypeOf, refusalOf, safeName } from "../../files/names.js"
import { nativeChannel, type OutboundDelivery, type ProgressEvent } from "../../contracts/channel.js"
import type { IngestMessageInput } from "../../contracts/connection-runtime.js"
import { native, type NativeConnectionRuntime, type NativeRuntimeContext } from "../../contracts/native-runtime.js"
import { sendInParts, runtimeSend } from "../parts.js"
import { keepTyping } from "../typing.js"
import { isTriggered, routeOf, untriggeredMetadata } from "../triggers.js"
import { toMarkdownV2 } from "./markdown-v2.js"
import type { TelegramSettings, TelegramWebhookSettings } from "./settings.js"
import * as TelegramApi from "./TelegramApi.js"
import { attachmentOf, decodeUpdate, nextOffset, receiptOf, senderOf, textOf, type TextUpdate } from "./updates.js"
import { readToken as readConnectionToken } from "../token.js"
import { listen, readSecret } from "./webhook.js"

export class TelegramRuntimeError extends Schema.TaggedError<TelegramRuntimeError>()("TelegramRuntimeError", {
  connection: Schema.String,
  operation: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `telegram connection '${this.connection}': ${this.operation}: ${this.reason}`
  }
}

export const UPDATES_STREAM = "updates"
/** The cursor stream of webhook mode: the last update id taken + 1 (informative; Telegram keeps the queue). */
export const WEBHOOK_STREAM = "webhook"
/** How often webhook mode checks (getWebhookInfo) that its webhook is still the one set. */
const WEBHOOK_CHECK = Duration.minutes(1)
/** Telegram's most characters per message (after entity parsing). */
export const MESSAGE_LIMIT = 4096
/** A chat action shows for 5 s; it is renewed before it runs out while the turn runs. */
const TYPING_RENEW = Duration.seconds(4)
/** Longest `retry_after` a send waits out inside one call (the outbox gives a call 30 s). */
const MAX_SEND_WAIT = Duration.seconds(20)

export interface TelegramRuntimeOptions {
  readonly name: string
  readonly settings: TelegramSettings
  /** `tokenFile` is relative to it. */
  readonly dataDir: string
  /** `files:` of pynchy.yaml (default: its defaults). */
  readonly files?: FilesConfig
}

/** The bot token (`tokenEnv` or `tokenFile`), a failure as this runtime's error. */
export const readToken = (name: string, settings: TelegramSettings, dataDir: string) =>
  readConnectionToken(name, settings, dataDir, (reason) => new TelegramRuntimeError({ connection: name, operation: "start", reason }))

const parseRefused = (e: TelegramApi.TelegramApiError) => e.status === 400 && /can't parse entities|can't find end/i.test(e.description ?? "")

export const makeTelegramRuntime = (options: TelegramRuntimeOptions): NativeConnectionRuntime => {
  const { name, settings } = options
  const limits = options.files ?? FilesConfig.make({})
  let ready = false
  let closed = true
  const fail = (operation: string) => (e: { readonly message: string }) => new TelegramRuntimeError({ connection: name, operation, reason: e.message })

  const start = (context: NativeRuntimeContext) =>
    Effect.gen(function* () {
      closed = false
      yield* Effect.addFinalizer(() => Effect.sync(() => {
        closed = true
        ready = false
      }))
      const token = yield* readToken(name, settings, options.dataDir)
      const api = yield* TelegramApi.make(token, settings.apiRoot).pipe(Effect.mapError(fail("start")))
      const me = yield* api.getMe.pipe(Effect.mapError(fail("getMe")))
      const routes = context.routes(name)
      const handle = me.username !== undefined ? `@${me.username}` : undefined
      const webhook = settings.mode === "webhook" ? settings.webhook : undefined
      const stream = webhook !== undefined ? WEBHOOK_STREAM : UPDATES_STREAM
      const stored = yield* context.cursor(name, stream).pipe(Effect.mapError(fail("cursor")))
      let offset = stored === null ? undefined : Number(stored.position)
      let order = stored?.order ?? 0
      let polling = false
      /** Polling: whether getWebhookInfo was asked since the start (or the last 409). */
      let webhookChecked = false
      /** Polling: a webhook was just deleted; the next poll reads every unconfirmed update. */
      let afterWebhook = false

      /** One API call, retried while Telegram says it was not processed (429, after retry_after) or it never left. */
      const patiently = <A>(call: Effect.Effect<A, TelegramApi.TelegramApiError>) =>
        call.pipe(
          Effect.tapError((e) => e.retryAfterSeconds !== undefined && Duration.lessThanOrEqualTo(Duration.seconds(e.retryAfterSeconds), MAX_SEND_WAIT)
            ? Effect.sleep(Duration.seconds(e.retryAfterSeconds))
            : Effect.void),
          Effect.retry({
            schedule: Schedule.exponential("100 millis").pipe(Schedule.union(Schedule.spaced("2 seconds")), Schedule.upTo(MAX_SEND_WAIT)),
            while: (e) => (e.status === 429 && e.retryAfterSeconds !== undefined && Duration.lessThanOrEqualTo(Duration.seconds(e.retryAfterSeconds), MAX_SEND_WAIT)) || e.notSent
          })
        )
      const sendPart = (chatId: string, text: string) =>
        patiently(api.sendMessage(chatId, toMarkdownV2(text), "MarkdownV2")).pipe(
          Effect.catchIf(parseRefused, () => patiently(api.sendMessage(chatId, text, undefined))),
          Effect.asVoid
        )
      const send = (delivery: OutboundDelivery) =>
        sendInParts({
          delivery,
          limit: MESSAGE_LIMIT,
          sendPart: ({ text }) => sendPart(delivery.place, text),
          // A spoken reply: a voice note after the text (Telegram plays OGG/Opus only).
          sendAudio: (audio) => Effect.asVoid(patiently(api.sendVoice(delivery.place, audio.bytes))),
          // The agent's outbox: each file a document, after the text and audio.
          sendFile: (file) => Effect.asVoid(patiently(api.sendDocument(delivery.place, file.bytes, file.name))),
          // An answer from Telegram, even an error, means it did not take the message.
          failure: (e) => ({ notSent: e.status !== undefined || e.notSent, reason: e.message })
        })

      const typingIn = yield* FiberMap.make<string>()
      const progress = (event: ProgressEvent) =>
        event.type === "started"
          ? FiberMap.run(typingIn, event.place, keepTyping(api.sendChatAction(event.place, "typing"), TYPING_RENEW))
          : event.type === "ended" ? FiberMap.remove(typingIn, event.place) : Effect.void
      const services = yield* Effect.context<DeliveryStore>()
      const channel = nativeChannel({
        name,
        // Each part is claimed in the database before it is sent (../parts.ts): a resend sends only
        // missing parts and never one whose outcome is unknown, so resending a delivery is safe.
        idempotentResends: true,
        audio: "ogg_opus",
        files: true,
        send: runtimeSend(`telegram connection '${name}'`, () => !closed, services, send),
        progress: (event) => (closed ? Effect.void : Effect.asVoid(progress(event)))
      })
      yield* context.bindChannel(channel)

      /** The file of a message, downloaded within `files:`; or why it was not. */
      const fileOf = (update: TextUpdate) =>
        Effect.gen(function* () {
          const attachment = attachmentOf(update)
          if (attachment === undefined) return {}
          const shown = safeName(attachment.name)
          const type = attachment.mimeType ?? mimeTypeOf(attachment.name)
          const why = refusalOf(attachment.size ?? 0, type, limits)
          if (why !== undefined) return { refused: [{ name: shown, reason: why }] }
          const bytes = yield* patiently(api.download(attachment.fileId, limits.maxBytes)).pipe(Effect.either)
          if (bytes._tag === "Left") {
            yield* Effect.logWarning("telegram file not downloaded").pipe(Effect.annotateLogs({ update: update.update_id, reason: bytes.left.message }))
            const tooLarge = bytes.left.description === "file too large"
            return { refused: [{ name: shown, reason: tooLarge ? `too large (the limit is ${limits.maxBytes} bytes)` : "could not be downloaded from Telegram" }] }
          }
          return { files: [{ name: attachment.name, mimeType: type, bytes: bytes.right }] }
        })

      // A batch of updates goes in one group commit, in order. A message with a file ends the
      // burst it joins, so no more than one message's files are held in memory at a time.
      const ingestBatch = (batch: ReadonlyArray<unknown>) =>
        Effect.gen(function* () {
          let pending: Array<IngestMessageInput> = []
          const flush = Effect.suspend(() => {
            const inputs = pending
            pending = []
            return inputs.length === 0 ? Effect.void : Effect.asVoid(context.ingestMany(inputs).pipe(Effect.mapError(fail("ingest"))))
          })
          for (const raw of batch) {
            const decoded = decodeUpdate(raw)
            if (decoded._tag === "malformed") {
              yield* Effect.logWarning("telegram update skipped: malformed (no update_id)")
              continue
            }
            if (decoded._tag === "skip") {
              yield* Effect.logDebug("telegram update skipped").pipe(Effect.annotateLogs({ update: decoded.updateId, reason: decoded.reason }))
              continue
            }
            const { update } = decoded
            const { message } = update
            const chatId = String(message.chat.id)
            const route = routeOf(routes, chatId)
            if (route === undefined || message.from?.is_bot === true || message.from?.id === me.id) continue
            const text = textOf(update)
            if (text.length > settings.maxInboundChars) {
              yield* Effect.logWarning("telegram message refused: too long").pipe(Effect.annotateLogs({ update: update.update_id, chars: text.length, limit: settings.maxInboundChars }))
              continue
            }
            const triggered = isTriggered({
              text,
              direct: message.chat.type === "private",
              trigger: route.trigger,
              handle,
              repliesToBot: message.reply_to_message?.from?.id === me.id
            })
            const file = yield* fileOf(update)
            order += 1
            pending.push({
              connection: name,
              place: chatId,
              providerEventId: receiptOf(update),
              sender: senderOf(update),
              text,
              ...(file.files !== undefined ? { files: file.files } : {}),
              metadata: {
                ...(file.refused !== undefined ? { filesRefused: file.refused } : {}),
                updateId: update.update_id,
                messageId: message.message_id,
                chatType: message.chat.type,
                ...(message.date !== undefined ? { date: message.date } : {}),
                ...(triggered ? {} : untriggeredMetadata)
              },
              cursor: { stream, position: String(update.update_id + 1), order }
            })
            if (file.files !== undefined) yield* flush
          }
          yield* flush
        })

      const step = Effect.gen(function* () {
        if (!webhookChecked) {
          const info = yield* api.getWebhookInfo
          if (info.url !== "") {
            yield* Effect.logWarning("telegram: a webhook is set; deleting it to poll (its pending updates are kept)").pipe(
              Effect.annotateLogs({ pending: info.pendingUpdateCount })
            )
            yield* api.deleteWebhook
            afterWebhook = true
          }
          webhookChecked = true
        }
        if (afterWebhook) {
          // Every update not confirmed yet: the webhook's undelivered ones, whatever the stored offset says.
          const batch = yield* api.getUpdates(undefined, 0)
          ready = true
          yield* ingestBatch(batch)
          offset = batch.length > 0 ? nextOffset(batch, 0) : offset ?? 0
          afterWebhook = false
        } else if (offset === undefined) {
          // First start: only take the position (offset -1 returns the newest update and forgets the rest).
          const last = yield* api.getUpdates(-1, 0)
          offset = nextOffset(last, 0)
        } else {
          const batch = yield* api.getUpdates(offset, polling ? settings.pollTimeoutSeconds : 0)
          ready = true
          yield* ingestBatch(batch)
          offset = nextOffset(batch, offset)
        }
        polling = true
        ready = true
      })

      const backoff = Schedule.exponential("100 millis").pipe(Schedule.union(Schedule.spaced(Duration.millis(settings.maxBackoffMs))))
      const pollLoop = step.pipe(
        Effect.catchAllDefect((defect) =>
          Effect.logError("telegram poll step died", Cause.die(defect)).pipe(
            Effect.zipRight(new TelegramRuntimeError({ connection: name, operation: "getUpdates", reason: "unexpected failure" }))
          )
        ),
        Effect.tapError((e) =>
          Effect.gen(function* () {
            ready = false
            yield* Effect.logWarning("telegram poll failed").pipe(Effect.annotateLogs({ reason: e.message }))
            // Flood control: Telegram says how long to wait.
            if (e._tag === "TelegramApiError" && e.retryAfterSeconds !== undefined) yield* Effect.sleep(Duration.seconds(e.retryAfterSeconds))
            // Conflict: a webhook was set meanwhile; the next step deletes it.
            if (e._tag === "TelegramApiError" && e.status === 409) webhookChecked = false
          })
        ),
        Effect.retry(backoff),
        Effect.forever,
        Effect.annotateLogs({ connection: name })
      )

      const serveWebhook = (hook: TelegramWebhookSettings) =>
        Effect.gen(function* () {
          const secret = yield* readSecret(name, hook, options.dataDir).pipe(Effect.mapError((e) => new TelegramRuntimeError({ connection: name, operation: "start", reason: e.reason })))
          // Listening before registering: Telegram's first POST finds the listener.
          yield* listen({ name, webhook: hook, secret, onUpdate: (update) => ingestBatch([update]) }).pipe(
            Effect.mapError((e) => new TelegramRuntimeError({ connection: name, operation: "listen", reason: e.reason }))
          )
          const register = api.setWebhook(hook.url, secret).pipe(
            Effect.zipRight(Effect.sync(() => (ready = true))),
            Effect.zipRight(Effect.logInfo("telegram webhook registered").pipe(Effect.annotateLogs({ url: hook.url })))
          )
          const check = api.getWebhookInfo.pipe(
            Effect.flatMap((info) =>
              info.url === hook.url
                ? Effect.void
                : Effect.logWarning("telegram webhook: another url is set; registering again").pipe(Effect.zipRight(Effect.sync(() => (ready = false))), Effect.zipRight(register))
            ),
            Effect.delay(WEBHOOK_CHECK),
            Effect.forever
          )
          const registration = register.pipe(
            Effect.zipRight(check),
            Effect.tapError((e) =>
              Effect.gen(function* () {
                ready = false
                yield* Effect.logWarning("telegram webhook registration failed").pipe(Effect.annotateLogs({ reason: e.message }))
                if (e.retryAfterSeconds !== undefined) yield* Effect.sleep(Duration.seconds(e.retryAfterSeconds))
              })
            ),
            Effect.retry(backoff),
            Effect.annotateLogs({ connection: name })
          )
          yield* Effect.forkScoped(registration)
        })

      if (webhook !== undefined) yield* serveWebhook(webhook)
      else yield* Effect.forkScoped(pollLoop)
    })

  return native({ name, start, isReady: Effect.sync(() => ready && !closed) })
}
