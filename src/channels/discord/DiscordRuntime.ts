/**
 * The Discord connection runtime: one per named `kind: discord` connection with an enabled route.
 *
 * - discord.js's Client holds the gateway session (HELLO, heartbeats, IDENTIFY, READY; after a
 *   drop it reconnects by itself, 500 ms apart, and RESUMEs the session when it can, so Discord
 *   replays what it missed; otherwise it IDENTIFYs afresh). Its REST client waits out 429s.
 * - Every dispatch is taken raw, in gateway order, into one queue with one consumer: a
 *   MESSAGE_CREATE is decoded and ingested; a READY or RESUMED first catches up. The message id
 *   is the receipt, so a replayed or redelivered message is a duplicate.
 * - The durable cursor is one stream, `messages`, whose position is the newest ingested message
 *   id per channel (JSON), written in the ingest transaction of each message. Catch-up after a
 *   READY or RESUMED (a gateway outage, a host that was down) reads each known channel's history
 *   after its id (`GET /channels/:id/messages?after=`, pages of 100, at most `catchUpPages`), where
 *   the bot may read it (a channel it lost access to is logged and skipped). Channels never seen
 *   have no cursor: the first start begins from "now".
 * - Guild channels, threads and direct messages are places (their channel id). Messages of routed
 *   places (not from bots) with text or files are ingested; system messages, messages with
 *   neither, malformed payloads and texts over `maxInboundChars` are skipped and logged. In a guild channel, a
 *   message that neither uses the route's trigger nor mentions the bot is context only.
 * - Replies go out as Discord Markdown (./markdown.ts), cut at 2,000 characters into parts under
 *   their own keys (../parts.ts). Each part carries a nonce derived from its key with
 *   `enforce_nonce`, so Discord returns the first message for a repeat within its window
 *   (`NONCE_WINDOW`): @discordjs/rest's own retries and a resend after a crash within that window
 *   cannot duplicate; a part left `sending` for longer is not resent (`unknown` and a notice).
 * - Files in: a message's attachments are judged by what Discord says of them (size, type, name)
 *   against `files:` first; only those that pass, and whose URL is on one of `fileOrigins`
 *   (Discord's CDN), are downloaded, each read up to `files.maxBytes` within `DOWNLOAD_TIMEOUT`,
 *   and handed to ingest (the workspace inbox). The others, and failed downloads, are named to
 *   the agent as refused (`filesRefused`); the message is stored either way.
 * - Files out: each file of a reply (the agent's outbox) is one more part after the text, posted
 *   as its own message with the file attached, under a nonce from its part key like the text.
 * - While a turn of a place runs, the bot shows as typing there (renewed every 8 s).
 * - isReady is true from READY or RESUMED until the gateway connection closes.
 */
import { Cause, Duration, Effect, FiberMap, Queue, Schedule, Schema } from "effect"
import { createHash } from "node:crypto"
import { FilesConfig } from "../../config/files.js"
import type { DeliveryStore } from "../../db/DeliveryStore.js"
import { mimeTypeOf, refusalOf, safeName } from "../../files/names.js"
import { nativeChannel, type OutboundDelivery, type ProgressEvent } from "../../contracts/channel.js"
import { native, type NativeConnectionRuntime, type NativeRuntimeContext } from "../../contracts/native-runtime.js"
import { sendInParts, runtimeSend } from "../parts.js"
import { keepTyping } from "../typing.js"
import { isTriggered, routeOf, untriggeredMetadata } from "../triggers.js"
import * as DiscordApi from "./DiscordApi.js"
import { toDiscordMarkdown } from "./markdown.js"
import { attachmentsOf, byId, decodeMessageEvent, type DiscordMessage, laterId, type Positions, readPositions, senderOf, writePositions } from "./messages.js"
import type { DiscordSettings } from "./settings.js"
import { readToken as readConnectionToken } from "../token.js"

export class DiscordRuntimeError extends Schema.TaggedError<DiscordRuntimeError>()("DiscordRuntimeError", {
  connection: Schema.String,
  operation: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `discord connection '${this.connection}': ${this.operation}: ${this.reason}`
  }
}

export const MESSAGES_STREAM = "messages"
/** Discord's most characters per message. */
export const MESSAGE_LIMIT = 2000
/**
 * How long a resend is safe under the same nonce. Discord checks `enforce_nonce` against "the
 * past few minutes" without a number; two minutes stays inside it.
 */
export const NONCE_WINDOW = Duration.minutes(2)
/** Typing shows for 10 s or until the bot's next message. */
const TYPING_RENEW = Duration.seconds(8)
const LOGIN_TIMEOUT = Duration.seconds(60)
/** The longest one attachment's download may take (the message's ingest waits for it). */
export const DOWNLOAD_TIMEOUT = Duration.seconds(30)

/** A nonce is at most 25 characters: a digest of the part's key. */
export const nonceOf = (partKey: string): string => createHash("sha256").update(partKey).digest("base64url").slice(0, 25)

export interface DiscordRuntimeOptions {
  readonly name: string
  readonly settings: DiscordSettings
  /** `tokenFile` is relative to it. */
  readonly dataDir: string
  /** `files:` of pynchy.yaml (default: its defaults). */
  readonly files?: FilesConfig
}

/** The bot token (`tokenEnv` or `tokenFile`), a failure as this runtime's error. */
export const readToken = (name: string, settings: DiscordSettings, dataDir: string) =>
  readConnectionToken(name, settings, dataDir, (reason) => new DiscordRuntimeError({ connection: name, operation: "start", reason }))

type Work = { readonly _tag: "message"; readonly raw: unknown } | { readonly _tag: "catchUp"; readonly after: string }

export const makeDiscordRuntime = (options: DiscordRuntimeOptions): NativeConnectionRuntime => {
  const { name, settings } = options
  const limits = options.files ?? FilesConfig.make({})
  const fileOrigins = new Set(settings.fileOrigins.map((o) => new URL(o).origin))
  let ready = false
  let closed = true
  const fail = (operation: string) => (e: { readonly message: string }) => new DiscordRuntimeError({ connection: name, operation, reason: e.message })

  const start = (context: NativeRuntimeContext) =>
    Effect.gen(function* () {
      closed = false
      yield* Effect.addFinalizer(() => Effect.sync(() => {
        closed = true
        ready = false
      }))
      const token = yield* readToken(name, settings, options.dataDir)
      const discord = yield* DiscordApi.loadDiscord.pipe(Effect.mapError(fail("start")))
      const routes = context.routes(name)
      const stored = yield* context.cursor(name, MESSAGES_STREAM).pipe(Effect.mapError(fail("cursor")))
      let positions: Positions = stored === null ? {} : readPositions(stored.position) ?? {}
      if (stored !== null && readPositions(stored.position) === undefined) yield* Effect.logWarning("discord cursor unreadable: starting from now").pipe(Effect.annotateLogs({ connection: name }))
      let order = stored?.order ?? 0

      const work = yield* Queue.unbounded<Work>()
      const { GatewayIntentBits, Events } = discord
      const client = new discord.Client({
        intents: [GatewayIntentBits.Guilds, GatewayIntentBits.GuildMessages, GatewayIntentBits.DirectMessages, GatewayIntentBits.MessageContent],
        rest: { api: settings.apiRoot.replace(/\/+$/, "") },
        // The runtime reads raw dispatches; nothing waits for the guild cache.
        waitGuildTimeout: 0
      })
      client.on(Events.Raw, (packet: { t?: unknown; d?: unknown }) => {
        if (typeof packet.d !== "object" || packet.d === null) {
          // discord.js hands the same packet to its own handlers next, and they throw on a payload
          // that is not an object (an unhandled rejection that would end the host): renamed, none runs.
          // A message is still queued, to be logged as malformed where the others are.
          if (packet.t === "MESSAGE_CREATE") Queue.unsafeOffer(work, { _tag: "message", raw: packet.d })
          packet.t = "PYNCHY_MALFORMED"
          return
        }
        if (packet.t === "MESSAGE_CREATE") Queue.unsafeOffer(work, { _tag: "message", raw: packet.d })
        else if (packet.t === "READY" || packet.t === "RESUMED") {
          ready = !closed
          Queue.unsafeOffer(work, { _tag: "catchUp", after: packet.t })
        }
      })
      client.on(Events.ShardReconnecting, () => void (ready = false))
      client.on(Events.ShardDisconnect, () => void (ready = false))
      client.on(Events.Error, () => void (ready = false))
      yield* Effect.addFinalizer(() => Effect.promise(() => client.destroy().catch(() => undefined)))

      yield* Effect.tryPromise({ try: () => client.login(token), catch: (e) => (e instanceof Error && /token/i.test(e.name + e.message) ? "the token was refused" : e instanceof Error ? e.message.slice(0, 200) : "login failed") }).pipe(
        Effect.timeoutFail({ duration: LOGIN_TIMEOUT, onTimeout: () => "login_timeout: no READY within 60 s" }),
        Effect.interruptible,
        Effect.mapError((reason) => new DiscordRuntimeError({ connection: name, operation: "login", reason }))
      )
      const me = client.user === null ? undefined : { id: client.user.id, username: client.user.username }
      if (me === undefined) return yield* new DiscordRuntimeError({ connection: name, operation: "login", reason: "READY carried no user" })
      const api = DiscordApi.make(client.rest)
      const handle = me.username !== undefined ? `@${me.username}` : undefined

      const sendRetrying = (post: Effect.Effect<string, DiscordApi.DiscordApiError>) =>
        post.pipe(
          // Nothing left the machine: a retry cannot duplicate.
          Effect.retry({ schedule: Schedule.exponential("100 millis").pipe(Schedule.upTo(Duration.seconds(10))), while: (e) => e.notSent }),
          Effect.asVoid
        )
      const sendPart = (channelId: string, text: string, key: string) => {
        const converted = toDiscordMarkdown(text)
        return sendRetrying(api.createMessage(channelId, converted.length <= MESSAGE_LIMIT ? converted : text, nonceOf(key)))
      }
      const send = (delivery: OutboundDelivery) =>
        sendInParts({
          delivery,
          limit: MESSAGE_LIMIT,
          sendPart: ({ key, text }) => sendPart(delivery.place, text, key),
          // An answer from Discord, even an error, means it did not take the message.
          failure: (e) => ({ notSent: e.refused || e.notSent, reason: e.message }),
          // The agent's outbox: each file its own message after the text, deduplicated by its nonce like a text part.
          sendFile: (file, key) => sendRetrying(api.createFileMessage(delivery.place, file, nonceOf(key))),
          resendUnknownWithin: NONCE_WINDOW
        })

      const typingIn = yield* FiberMap.make<string>()
      const progress = (event: ProgressEvent) =>
        event.type === "started"
          ? FiberMap.run(typingIn, event.place, keepTyping(api.typing(event.place), TYPING_RENEW))
          : event.type === "ended" ? FiberMap.remove(typingIn, event.place) : Effect.void
      const services = yield* Effect.context<DeliveryStore>()
      const channel = nativeChannel({
        name,
        // Parts are claimed before they are sent (../parts.ts) and carry a nonce Discord
        // deduplicates: a resend sends missing parts, and repeats a `sending` one only within the window.
        idempotentResends: true,
        files: true,
        send: runtimeSend(`discord connection '${name}'`, () => !closed, services, send),
        progress: (event) => (closed ? Effect.void : Effect.asVoid(progress(event)))
      })
      yield* context.bindChannel(channel)

      /** A message's attachments: those within `files:` and from the CDN downloaded; the others named with why. */
      const filesOf = (message: DiscordMessage) =>
        Effect.gen(function* () {
          const { attachments, malformed } = attachmentsOf(message)
          const files: Array<{ name: string; mimeType: string; bytes: Uint8Array }> = []
          const refused: Array<{ name: string; reason: string }> = []
          for (let i = 0; i < malformed; i++) refused.push({ name: "attachment", reason: "malformed (Discord's description of it did not decode)" })
          for (const attachment of attachments) {
            const shown = safeName(attachment.filename)
            const type = attachment.content_type ?? mimeTypeOf(attachment.filename)
            const origin = URL.canParse(attachment.url) ? new URL(attachment.url).origin : undefined
            const why = files.length >= limits.maxFiles
              ? `too many files (the limit is ${limits.maxFiles})`
              : refusalOf(attachment.size, type, limits) ??
                (origin === undefined || !fileOrigins.has(origin) ? `not downloaded: its URL is not on Discord's CDN (${origin ?? "not a URL"})` : undefined)
            if (why !== undefined) {
              refused.push({ name: shown, reason: why })
              continue
            }
            const bytes = yield* Effect.either(DiscordApi.download(attachment.url, limits.maxBytes, DOWNLOAD_TIMEOUT))
            if (bytes._tag === "Right") {
              files.push({ name: shown, mimeType: type, bytes: bytes.right })
              continue
            }
            yield* Effect.logWarning("discord attachment not downloaded").pipe(Effect.annotateLogs({ messageId: message.id, attachment: attachment.id, reason: bytes.left.message }))
            refused.push({
              name: shown,
              reason: bytes.left.code === "too_large"
                ? `too large (the limit is ${limits.maxBytes} bytes)`
                : bytes.left.code === "download_timeout"
                ? `download_timeout: not downloaded from Discord within ${Duration.format(DOWNLOAD_TIMEOUT)}`
                : `could not be downloaded from Discord${bytes.left.status !== undefined ? ` (${bytes.left.status})` : ""}`
            })
          }
          return { files, refused }
        })

      const ingest = (message: DiscordMessage) =>
        Effect.gen(function* () {
          const place = message.channel_id
          const route = routeOf(routes, place)
          if (route === undefined || message.author.bot === true || message.author.id === me.id) return
          if (message.content.length > settings.maxInboundChars) {
            return yield* Effect.logWarning("discord message refused: too long").pipe(Effect.annotateLogs({ message: message.id, chars: message.content.length, limit: settings.maxInboundChars }))
          }
          const triggered = isTriggered({
            text: message.content,
            direct: message.guild_id === undefined,
            trigger: route.trigger,
            handle,
            repliesToBot: message.referenced_message?.author?.id === me.id,
            mentionsBot: message.mentions.some((u) => u.id === me.id)
          })
          const { files, refused } = yield* filesOf(message)
          const next = { ...positions, [place]: laterId(positions[place], message.id) }
          order += 1
          yield* context.ingest({
            connection: name,
            place,
            providerEventId: message.id,
            sender: senderOf(message),
            text: message.content,
            ...(files.length > 0 ? { files } : {}),
            metadata: {
              ...(refused.length > 0 ? { filesRefused: refused } : {}),
              messageId: message.id,
              authorId: message.author.id,
              ...(message.guild_id !== undefined ? { guildId: message.guild_id } : { direct: true }),
              ...(message.timestamp !== undefined ? { timestamp: message.timestamp } : {}),
              ...(triggered ? {} : untriggeredMetadata)
            },
            cursor: { stream: MESSAGES_STREAM, position: writePositions(next), order }
          }).pipe(Effect.mapError(fail("ingest")))
          positions = next
        })

      const take = (raw: unknown) =>
        Effect.gen(function* () {
          const decoded = decodeMessageEvent(raw)
          if (decoded._tag === "skip") return yield* Effect.logDebug("discord message skipped").pipe(Effect.annotateLogs({ reason: decoded.reason }))
          yield* ingest(decoded.message)
        })

      /** A known channel's history after its cursor, oldest first, page by page. */
      const catchUpChannel = (channelId: string) =>
        Effect.gen(function* () {
          let after = positions[channelId]!
          for (let page = 0; page < settings.catchUpPages; page++) {
            const batch = yield* api.messagesAfter(channelId, after)
            const messages: Array<DiscordMessage> = []
            for (const raw of batch) {
              const decoded = decodeMessageEvent(raw)
              if (decoded._tag === "text") messages.push(decoded.message)
              const id = (raw as { id?: unknown } | null)?.id
              if (typeof id === "string" && /^\d{1,20}$/.test(id)) after = laterId(after, id)
            }
            for (const m of messages.sort(byId)) yield* ingest(m)
            if (batch.length < 100) return
          }
          yield* Effect.logWarning("discord catch-up stopped at catchUpPages").pipe(Effect.annotateLogs({ channel: channelId, pages: settings.catchUpPages }))
        }).pipe(
          Effect.catchTag("DiscordApiError", (e) =>
            Effect.logWarning("discord catch-up skipped a channel").pipe(Effect.annotateLogs({ channel: channelId, reason: e.message })))
        )

      const catchUp = (after: string) =>
        Effect.gen(function* () {
          const known = Object.keys(positions)
          if (known.length === 0) return
          yield* Effect.logInfo("discord catching up").pipe(Effect.annotateLogs({ after, channels: known.length }))
          for (const channelId of known) yield* catchUpChannel(channelId)
        })

      const consume = Queue.take(work).pipe(
        Effect.flatMap((item) => (item._tag === "message" ? take(item.raw) : catchUp(item.after))),
        // An ingest that failed (the database) is logged; the message comes back with the next catch-up.
        Effect.catchAll((e) => Effect.logWarning("discord message not ingested").pipe(Effect.annotateLogs({ reason: e.message }))),
        Effect.catchAllDefect((defect) => Effect.logError("discord consumer step died", Cause.die(defect))),
        Effect.forever,
        Effect.annotateLogs({ connection: name })
      )
      yield* Effect.forkScoped(consume)
    })

  return native({ name, start, isReady: Effect.sync(() => ready && !closed) })
}
