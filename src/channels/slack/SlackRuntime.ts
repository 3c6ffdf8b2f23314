/**
 * The Slack connection runtime: one per named `kind: slack` connection with an enabled route,
 * built on a bolt App (its WebClient for the Web API, its event routing for the listeners).
 *
 * - Socket Mode (default): the runtime's loop opens one Socket Mode connection at a time
 *   (apps.connections.open, then the WebSocket until Slack's `hello`). When it drops or Slack
 *   asks for a refresh, the loop connects again at once; when connecting fails, it retries with
 *   exponential backoff capped at `maxBackoffMs`. HTTP mode: bolt's HTTPReceiver listens on
 *   `host:port` + `path` and checks every request's signature (./receivers.ts).
 * - A user's message (text, files or both) in a routed channel, DM or thread is ingested with
 *   `<channel>:<ts>` as its receipt, so a redelivered event (Slack retries what was not acked) is a duplicate, and so
 *   is a message that catch-up reads from history too (./history.ts: on every connection, each
 *   known place's messages after the newest one ingested there). The
 *   envelope (or the HTTP answer) is acknowledged only after the ingest committed. A thread reply
 *   is the place `<channel>/<thread_ts>`. In a channel, a message that neither uses the route's
 *   trigger nor mentions the app (nor answers in a thread the app started) is ingested as context
 *   only (../triggers.ts). Subtypes other than `file_share` (edits, joins, bots), other event
 *   types, malformed events and texts over `maxInboundChars` are skipped and logged.
 * - A message's files are judged from the event (deleted, external, `files:` size, type and
 *   count, a URL off Slack's file host) and the rest downloaded with the bot token, capped and
 *   under a deadline (./files.ts), before the ingest; ingest saves them in the workspace inbox, and
 *   each refused one is named to the agent with why. The message is stored either way.
 * - Replies go out with chat.postMessage as mrkdwn (./mrkdwn.ts), in the thread of their place,
 *   cut at 4,000 characters into parts sent under their own keys (../parts.ts). Slack has no
 *   idempotency key: a part whose outcome is unknown after a crash is never resent; the delivery
 *   ends `unknown` and the user gets a notice. 429 answers are retried after `Retry-After`. The
 *   agent's outbox files follow the text, each its own claimed part (`<key>#file<n>`), uploaded
 *   with Slack's external upload flow into the same channel and thread (./files.ts).
 * - isReady: Socket Mode, true while a connection is open (after `hello`); HTTP, while the
 *   endpoint listens.
 *
 * Slack has no typing indicator for apps outside its AI-assistant threads, so no progress is shown.
 */
import type * as Bolt from "@slack/bolt"
import { Cause, Config, Deferred, Duration, Effect, Exit, Redacted, Runtime, Schedule, Schema } from "effect"
import { FilesConfig } from "../../config/files.js"
import type { DeliveryStore } from "../../db/DeliveryStore.js"
import { nativeChannel, type OutboundDelivery } from "../../contracts/channel.js"
import { native, type NativeConnectionRuntime, type NativeRuntimeContext } from "../../contracts/native-runtime.js"
import { sendInParts, runtimeSend } from "../parts.js"
import { isTriggered, routeOf, untriggeredMetadata } from "../triggers.js"
import { decodeCallback, isDirect, type MessageEvent, placeOf, targetOf } from "./events.js"
import { fileOrigins, notShared, receiveFiles, uploadFile } from "./files.js"
import { compareTs, fromHistory, laterTs, type Positions, readPositions, receiptOf, writePositions } from "./history.js"
import { fromSlackText, toMrkdwn } from "./mrkdwn.js"
import { boltLogger, checkSkew, SocketBridge } from "./receivers.js"
import type { SlackSettings } from "./settings.js"
import * as SlackApi from "./SlackApi.js"
import { importModule } from "../../system/import-module.js"

export class SlackRuntimeError extends Schema.TaggedError<SlackRuntimeError>()("SlackRuntimeError", {
  connection: Schema.String,
  operation: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `slack connection '${this.connection}': ${this.operation}: ${this.reason}`
  }
}

/** The cursor stream: the newest ingested ts per place, as JSON (history.ts: catch-up starts there). */
export const EVENTS_STREAM = "events"
/** Slack shows up to 4,000 characters of a message's text well (it truncates at 40,000). */
export const MESSAGE_LIMIT = 4000
/** Longest `Retry-After` a send waits out inside one call (the outbox gives a call 30 s). */
const MAX_SEND_WAIT = Duration.seconds(20)
/** From apps.connections.open to Slack's `hello`. */
const CONNECT_TIMEOUT = Duration.seconds(30)

export interface SlackRuntimeOptions {
  readonly name: string
  readonly settings: SlackSettings
  /** `files:` of pynchy.yaml (default: its defaults). */
  readonly files?: FilesConfig
}

/** A secret named by `<field>`: the environment variable's value, through Config. */
export const readSecret = (name: string, field: "botTokenEnv" | "appTokenEnv" | "signingSecretEnv", variable: string) =>
  Config.redacted(variable).pipe(
    Effect.map(Redacted.value),
    Effect.mapError(() => new SlackRuntimeError({ connection: name, operation: "start", reason: `connections.${name}.${field}: ${variable} is not set` }))
  )

export const makeSlackRuntime = (options: SlackRuntimeOptions): NativeConnectionRuntime => {
  const { name, settings } = options
  const limits = options.files ?? FilesConfig.make({})
  const origins = fileOrigins(settings.apiUrl)
  let ready = false
  let closed = true
  const fail = (operation: string) => (e: { readonly message: string }) => new SlackRuntimeError({ connection: name, operation, reason: e.message })

  const start = (context: NativeRuntimeContext) =>
    Effect.gen(function* () {
      closed = false
      yield* Effect.addFinalizer(() => Effect.sync(() => {
        closed = true
        ready = false
      }))
      const bolt = yield* SlackApi.loadBolt.pipe(Effect.mapError(fail("start")))
      const botToken = yield* readSecret(name, "botTokenEnv", settings.botTokenEnv)
      const options = SlackApi.clientOptions(settings.apiUrl)
      const me = yield* SlackApi.webApi(new bolt.webApi.WebClient(botToken, options)).authTest.pipe(Effect.mapError(fail("auth.test")))
      const runtime = yield* Effect.runtime<DeliveryStore>()
      const services = yield* Effect.context<DeliveryStore>()
      const logger = boltLogger(runtime, name)
      const receiver = settings.mode === "socket"
        ? new SocketBridge()
        : checkSkew(new bolt.HTTPReceiver({
          signingSecret: yield* readSecret(name, "signingSecretEnv", settings.signingSecretEnv!),
          endpoints: [settings.path],
          processBeforeResponse: true,
          logger
        }), yield* Effect.clock)
      const app = new bolt.App({
        token: botToken,
        receiver,
        clientOptions: options,
        logger,
        botUserId: me.userId,
        ...(me.botId !== undefined ? { botId: me.botId } : {}),
        tokenVerificationEnabled: false,
        convoStore: false
      })
      const api = SlackApi.webApi(app.client)
      const routes = context.routes(name)
      const handle = `<@${me.userId}>`
      const stored = yield* context.cursor(name, EVENTS_STREAM).pipe(Effect.mapError(fail("cursor")))
      let order = stored?.order ?? 0
      let positions: Positions = (stored ? readPositions(stored.position) : undefined) ?? {}
      // One ingest at a time: envelopes arrive concurrently and catch-up runs beside them; a
      // conversation's messages keep their order.
      const lock = yield* Effect.makeSemaphore(1)

      /** A user's message, from an event (`eventId`) or from history; under `lock`. */
      const ingestMessage = (event: MessageEvent, eventId: string | undefined) =>
        Effect.gen(function* () {
          const receipt = receiptOf(event)
          if (event.user === me.userId) return
          const place = placeOf(event)
          const route = routeOf(routes, place)
          if (route === undefined) return yield* Effect.logDebug("slack message skipped: no route").pipe(Effect.annotateLogs({ message: receipt }))
          const text = fromSlackText(event.text)
          if (text.length > settings.maxInboundChars) {
            return yield* Effect.logWarning("slack message refused: too long").pipe(Effect.annotateLogs({ message: receipt, chars: text.length, limit: settings.maxInboundChars }))
          }
          const triggered = isTriggered({ text, direct: isDirect(event), trigger: route.trigger, handle, repliesToBot: event.parent_user_id === me.userId })
          const got = event.files === undefined ? undefined : yield* receiveFiles(event.files, { token: botToken, limits, origins })
          const next = { ...positions, [place]: laterTs(positions[place], event.ts) }
          order += 1
          yield* context.ingest({
            connection: name,
            place,
            providerEventId: receipt,
            sender: event.user,
            text,
            ...(got !== undefined && got.files.length > 0 ? { files: got.files } : {}),
            metadata: {
              ...(got !== undefined && got.refused.length > 0 ? { filesRefused: got.refused } : {}),
              ...(eventId !== undefined ? { eventId } : { fromHistory: true }),
              ts: event.ts,
              channel: event.channel,
              ...(event.channel_type !== undefined ? { channelType: event.channel_type } : {}),
              ...(event.thread_ts !== undefined ? { threadTs: event.thread_ts } : {}),
              ...(triggered ? {} : untriggeredMetadata)
            },
            cursor: { stream: EVENTS_STREAM, position: writePositions(next), order }
          })
          positions = next
        })

      const onEvent = (body: unknown) =>
        Effect.gen(function* () {
          const decoded = decodeCallback(body)
          if (decoded._tag === "malformed") return yield* Effect.logWarning("slack event skipped: malformed (no event_callback with an event_id)")
          if (decoded._tag === "skip") return yield* Effect.logDebug("slack event skipped").pipe(Effect.annotateLogs({ event: decoded.eventId, reason: decoded.reason }))
          yield* lock.withPermits(1)(ingestMessage(decoded.callback.event, decoded.callback.event_id))
        }).pipe(Effect.annotateLogs({ connection: name }))

      app.event("message", async ({ body }) => {
        await Runtime.runPromise(runtime)(onEvent(body))
      })
      // The App's default handler swallows nothing either, but logs the whole error object: log the message, rethrow (no ack).
      app.error(async (error) => {
        Runtime.runFork(runtime)(Effect.logWarning(`slack event not processed: ${error.message}`).pipe(Effect.annotateLogs({ connection: name })))
        throw error
      })

      /** One call, retried while Slack says it was not taken (429 within MAX_SEND_WAIT) or it never left. */
      const patiently = <A>(call: Effect.Effect<A, SlackApi.SlackApiError>) =>
        call.pipe(
          Effect.tapError((e) => e.retryAfterSeconds !== undefined && Duration.lessThanOrEqualTo(Duration.seconds(e.retryAfterSeconds), MAX_SEND_WAIT)
            ? Effect.sleep(Duration.seconds(e.retryAfterSeconds))
            : Effect.void),
          Effect.retry({
            schedule: Schedule.exponential("100 millis").pipe(Schedule.union(Schedule.spaced("2 seconds")), Schedule.upTo(MAX_SEND_WAIT)),
            while: (e) => (e.retryAfterSeconds !== undefined && Duration.lessThanOrEqualTo(Duration.seconds(e.retryAfterSeconds), MAX_SEND_WAIT)) || e.notSent
          })
        )
      /**
       * Each known place's messages after its position (history.ts), read to the end or to
       * `catchUpPages` pages, then ingested oldest first. The caller holds `lock` from before the
       * connection opens, so events Slack delivers on it wait behind what they came after (and
       * those that are in the history too are duplicates by then). A place whose history
       * cannot be read (the app left the channel, a scope is missing) is logged and skipped.
       */
      const catchUp = Effect.gen(function* () {
        const known = Object.entries(positions)
        if (known.length === 0 || settings.catchUpPages === 0) return
        yield* Effect.logInfo("slack catching up").pipe(Effect.annotateLogs({ places: known.length }))
        for (const [place, oldest] of known) {
          const { channel, threadTs } = targetOf(place)
          const missed: Array<MessageEvent> = []
          let cursor: string | undefined = undefined
          for (let page = 0; page < settings.catchUpPages; page++) {
            const batch: SlackApi.HistoryPage = yield* patiently(api.historyPage({ channel, threadTs, oldest, cursor })).pipe(
              Effect.tapError((e) => Effect.logWarning("slack catch-up skipped a place").pipe(Effect.annotateLogs({ place, reason: e.message }))),
              Effect.orElseSucceed((): SlackApi.HistoryPage => ({ messages: [], next: undefined }))
            )
            for (const raw of batch.messages) {
              const m = fromHistory(channel, raw)
              if (m._tag === "message" && placeOf(m.event) === place && compareTs(m.event.ts, oldest) > 0) missed.push(m.event)
            }
            cursor = batch.next
            if (cursor === undefined) break
          }
          if (cursor !== undefined) yield* Effect.logWarning("slack catch-up stopped at catchUpPages").pipe(Effect.annotateLogs({ place, pages: settings.catchUpPages }))
          for (const event of missed.sort((a, b) => compareTs(a.ts, b.ts))) yield* ingestMessage(event, undefined)
        }
      }).pipe(
        Effect.catchAll((e) => Effect.logWarning("slack catch-up failed; the next connection tries again").pipe(Effect.annotateLogs({ reason: e.message }))),
        Effect.annotateLogs({ connection: name })
      )

      const send = (delivery: OutboundDelivery) => {
        const { channel, threadTs } = targetOf(delivery.place)
        return sendInParts({
          delivery,
          limit: MESSAGE_LIMIT,
          sendPart: ({ text }) => patiently(api.postMessage(channel, threadTs, toMrkdwn(text))),
          // The agent's outbox: each file one upload, shared in the place's channel and thread.
          sendFile: (file) => uploadFile(app.client, { channel, threadTs, name: file.name, bytes: file.bytes }, origins, patiently),
          failure: (e) => ({ notSent: e.answered || e.notSent || notShared(e), reason: e.message })
        })
      }
      const channel = nativeChannel({
        name,
        // Each part is claimed in the database before it is sent (../parts.ts): a resend sends only
        // missing parts and never one whose outcome is unknown, so resending a delivery is safe.
        idempotentResends: true,
        files: true,
        send: runtimeSend(`slack connection '${name}'`, () => !closed, services, send)
      })
      yield* context.bindChannel(channel)

      if (receiver instanceof SocketBridge) {
        const appToken = yield* readSecret(name, "appTokenEnv", settings.appTokenEnv!)
        const { SocketModeClient } = yield* Effect.tryPromise({
          try: () => importModule<typeof import("@slack/socket-mode")>("@slack/socket-mode"),
          catch: () => new SlackRuntimeError({ connection: name, operation: "start", reason: "the package '@slack/socket-mode' (installed with @slack/bolt) cannot be loaded" })
        })
        /** One connection: fails if it cannot be opened; succeeds when an open one closes. */
        const session = Effect.gen(function* () {
          const client = yield* Effect.acquireRelease(
            Effect.sync(() => new SocketModeClient({ appToken, autoReconnectEnabled: false, logger, clientOptions: options })),
            (client) => Effect.promise(() => client.disconnect()).pipe(Effect.interruptible, Effect.timeout("5 seconds"), Effect.ignore)
          )
          receiver.attach(client, () => Runtime.runFork(runtime)(Effect.logWarning("slack envelope skipped: malformed").pipe(Effect.annotateLogs({ connection: name }))))
          const closedSocket = yield* Deferred.make<void>()
          client.on("disconnected", () => Deferred.unsafeDone(closedSocket, Exit.void))
          // Events that arrive as the socket opens wait (the lock) until catch-up has ingested what came before them.
          yield* lock.withPermits(1)(Effect.gen(function* () {
            yield* Effect.tryPromise({ try: () => client.start(), catch: (e) => SlackApi.toSlackError("connect")(e) }).pipe(
              Effect.interruptible,
              Effect.timeoutFail({ duration: CONNECT_TIMEOUT, onTimeout: () => new SlackApi.SlackApiError({ operation: "connect", error: "connect_timeout" }) })
            )
            ready = true
            yield* Effect.logDebug("slack socket connected")
            yield* catchUp
          }))
          yield* Deferred.await(closedSocket)
          ready = false
          yield* Effect.logInfo("slack socket closed; connecting again")
        }).pipe(Effect.scoped, Effect.ensuring(Effect.sync(() => (ready = false))))

        const backoff = Schedule.exponential("100 millis").pipe(Schedule.union(Schedule.spaced(Duration.millis(settings.maxBackoffMs))))
        const loop = session.pipe(
          Effect.catchAllDefect((defect) =>
            Effect.logError("slack socket session died", Cause.die(defect)).pipe(Effect.zipRight(new SlackApi.SlackApiError({ operation: "connect", error: "unexpected_failure" })))
          ),
          Effect.tapError((e) => Effect.logWarning("slack connect failed").pipe(Effect.annotateLogs({ reason: e.message }))),
          Effect.retry(backoff),
          Effect.forever,
          Effect.annotateLogs({ connection: name })
        )
        yield* Effect.forkScoped(loop)
      } else {
        const http = receiver as Bolt.HTTPReceiver
        // The lock is taken before a request can come in; catch-up lets it go.
        yield* lock.take(1)
        yield* Effect.acquireRelease(
          Effect.tryPromise({ try: () => http.start({ port: settings.port!, host: settings.host }), catch: (e) => fail("listen")({ message: e instanceof Error ? e.message : "failed" }) }),
          () => Effect.promise(() => http.stop()).pipe(Effect.interruptible, Effect.timeout("5 seconds"), Effect.ignore)
        )
        ready = true
        yield* Effect.forkScoped(catchUp.pipe(Effect.ensuring(lock.release(1))))
      }
    })

  return native({ name, start, isReady: Effect.sync(() => ready && !closed) })
}
