/**
 * The Matrix connection runtime: one per named `kind: matrix` connection with an enabled route.
 *
 * - A /sync long-poll loop. Its `since` token is the durable cursor (stream `sync`), advanced in
 *   the ingest transaction of the last message of a sync; a sync without messages only moves the
 *   in-memory token, so after a restart at most those empty syncs are replayed (harmless).
 * - A file message (m.image, m.file, m.audio, m.video) is judged by its event against `files:`,
 *   then downloaded from the homeserver's authenticated media API, capped, and ingested with its
 *   caption as the text; what is refused is named to the agent.
 * - Message events of routed rooms (not the bot's own) are ingested one by one; the receipt
 *   (connection, event id) deduplicates a replayed sync. A limited timeline is backfilled through
 *   /messages down to the previous token, so a long outage loses nothing.
 * - Replies go out with `PUT .../send/m.room.message/{txnId}`, the txn id derived from the
 *   delivery's idempotency key: a resend after a crash is deduplicated by the homeserver. Markdown
 *   goes out as Matrix HTML too (`formatted_body`, ./html.ts); `body` keeps the text.
 * - Group rooms (more than two members) follow the route's trigger (../triggers.ts): a message is
 *   answered when it uses the trigger word, names the bot's user id, or mentions the bot
 *   (`m.mentions`, which clients also set on a reply to the bot); any other is stored as context
 *   for the next turn. A room of two (the bot and one person) is a direct chat: always answered.
 *   Member counts come from the sync's room summaries, or `joined_members` the first time.
 * - While a turn of a room runs, the bot shows as typing there (renewed; off when the turn ends).
 *   Typing is progress, not a delivery: a failed typing call is ignored.
 * - isReady is true after a successful sync and false from a failed one until the next success.
 *
 * It is an Effect-native runtime (src/contracts/native-runtime.ts): it talks through the host's
 * HttpClient, and its sync loop and typing fibers are forked into the runtime's scope, so they
 * run in the host's runtime (its logger and tracer) and stop when the runtime closes. A defect
 * in the loop is logged and the loop goes on.
 *
 * The first start of a connection (no cursor yet) begins from "now": history is not answered.
 */
import { Cause, Duration, Effect, FiberMap, Schedule, Schema } from "effect"
import { createHash } from "node:crypto"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { FilesConfig } from "../../config/files.js"
import type { DeliveryStore } from "../../db/DeliveryStore.js"
import { mimeTypeOf, refusalOf, safeName } from "../../files/names.js"
import { nativeChannel, type OutboundAudio, type OutboundDelivery, type OutboundFile, type ProgressEvent } from "../../contracts/channel.js"
import type { IngestMessageInput } from "../../contracts/connection-runtime.js"
import { native, type NativeConnectionRuntime, type NativeRuntimeContext } from "../../contracts/native-runtime.js"
import { sendInParts, runtimeSend } from "../parts.js"
import { keepTyping } from "../typing.js"
import { isTriggered, routeOf, untriggeredMetadata } from "../triggers.js"
import { formattedContent } from "./html.js"
import * as MatrixApi from "./MatrixApi.js"
import type { MatrixSettings } from "./settings.js"

export class MatrixRuntimeError extends Schema.TaggedError<MatrixRuntimeError>()("MatrixRuntimeError", {
  connection: Schema.String,
  operation: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `matrix connection '${this.connection}': ${this.operation}: ${this.reason}`
  }
}

export const SYNC_STREAM = "sync"
/**
 * Most characters of one reply event. An event may hold 65,536 bytes of JSON, with the text twice
 * (body and formatted_body): 4,000 characters stay under it even when every one is escaped.
 */
export const MESSAGE_LIMIT = 4_000
const TEXT_TYPES = new Set(["m.text", "m.emote"])
/** Message types that carry a file in `url` (an `mxc://` URI), its name and its caption. */
const FILE_TYPES = new Set(["m.image", "m.file", "m.audio", "m.video"])
/** From the request to the last byte of one file a user sent. */
const DOWNLOAD_TIMEOUT = Duration.seconds(60)
const MAX_BACKFILL_PAGES = 50
/** A typing notice lasts this long on the homeserver; it is renewed before it runs out while the turn runs. */
export const TYPING_TIMEOUT = Duration.seconds(30)
const TYPING_RENEW = Duration.seconds(20)

/** The homeserver's transaction id for a delivery: stable across resends and restarts. */
export const txnIdOf = (delivery: Pick<OutboundDelivery, "conversationId" | "idempotencyKey">): string =>
  "pynchy." + createHash("sha256").update(`${delivery.conversationId}\u0000${delivery.idempotencyKey}`).digest("base64url").slice(0, 32)

const localpartOf = (userId: string) => userId.slice(1, userId.indexOf(":"))

const readSecret = (connection: string, field: string, file: string, dataDir: string) =>
  Effect.tryPromise({
    try: () => fs.readFile(path.resolve(dataDir, file), "utf8"),
    catch: () => new MatrixRuntimeError({ connection, operation: "start", reason: `connections.${connection}.${field}: cannot read the file` })
  }).pipe(Effect.map((s) => s.trim()))

export interface MatrixRuntimeOptions {
  readonly name: string
  readonly settings: MatrixSettings
  /** Credential files are relative to it. */
  readonly dataDir: string
  /** `files:` of pynchy.yaml (default: its defaults). */
  readonly files?: FilesConfig
}

/**
 * A file message's text: its caption, which is `body` when `filename` names the file apart
 * (Matrix 1.10); otherwise `body` is the file's name and there is no caption.
 */
const captionOf = (content: Record<string, unknown>): string =>
  typeof content["filename"] === "string" && content["filename"] !== "" && content["filename"] !== content["body"] ? String(content["body"]) : ""

export const makeMatrixRuntime = (options: MatrixRuntimeOptions): NativeConnectionRuntime => {
  const { name, settings } = options
  const limits = options.files ?? FilesConfig.make({})
  let ready = false
  let closed = true
  const fail = (operation: string) => (e: unknown) =>
    new MatrixRuntimeError({ connection: name, operation, reason: e instanceof Error || e instanceof MatrixApi.MatrixApiError ? e.message : "failed" })

  const authenticate = (api: MatrixApi.MatrixApi) =>
    Effect.gen(function* () {
      if (settings.accessToken !== undefined || settings.accessTokenFile !== undefined) {
        const token = settings.accessToken ?? (yield* readSecret(name, "accessTokenFile", settings.accessTokenFile!, options.dataDir))
        const userId = yield* api.whoami(token).pipe(Effect.mapError(fail("whoami")))
        return { token, userId }
      }
      const password = settings.password ?? (yield* readSecret(name, "passwordFile", settings.passwordFile!, options.dataDir))
      const deviceId = settings.deviceId ?? `PYNCHY_${name.replace(/[^A-Za-z0-9_.-]/g, "_").slice(0, 50)}`
      const login = yield* api.login(localpartOf(settings.userId), password, deviceId).pipe(Effect.mapError(fail("login")))
      return { token: login.access_token, userId: login.user_id }
    })

  const start = (context: NativeRuntimeContext) =>
    Effect.gen(function* () {
      closed = false
      yield* Effect.addFinalizer(() =>
        Effect.sync(() => {
          closed = true
          ready = false
        })
      )
      const api = yield* MatrixApi.make(settings.homeserver)
      const { token, userId } = yield* authenticate(api)
      if (userId !== settings.userId) {
        return yield* new MatrixRuntimeError({ connection: name, operation: "start", reason: `connections.${name}.userId: the credential belongs to another account` })
      }
      const routes = context.routes(name)
      const routed = (roomId: string) => routes.some((r) => r.place === "*" || r.place === roomId)
      const stored = yield* context.cursor(name, SYNC_STREAM).pipe(Effect.mapError(fail("cursor")))
      let since = stored?.position
      let order = stored?.order ?? 0
      // The first sync of a start returns at once, so readiness does not wait out a long-poll.
      let polling = false

      // Transient failures are retried here (the txn id makes it safe), within the outbox's call deadline.
      const patiently = <A>(call: Effect.Effect<A, MatrixApi.MatrixApiError>) =>
        Effect.retry(call, {
          schedule: Schedule.exponential("100 millis").pipe(Schedule.union(Schedule.spaced("2 seconds")), Schedule.upTo("20 seconds")),
          while: (e) => !e.permanent
        })
      // An upload, then an event that points at it, under its own txn id.
      const sendMedia = (roomId: string, txnId: string, bytes: Uint8Array, mimeType: string, filename: string, msgtype: string) =>
        Effect.gen(function* () {
          const url = yield* patiently(api.upload(token, bytes, mimeType, filename))
          yield* patiently(api.send(token, roomId, txnId, { msgtype, body: filename, url, info: { mimetype: mimeType, size: bytes.length } }))
        })
      const msgtypeOfFile = (file: OutboundFile) =>
        file.mimeType.startsWith("image/") ? "m.image" : file.mimeType.startsWith("audio/") ? "m.audio" : file.mimeType.startsWith("video/") ? "m.video" : "m.file"
      // A long reply goes as numbered parts (../parts.ts), then a spoken reply's audio (an m.audio
      // event) and the agent's outbox files, each claimed as a part of its own. Every event has a
      // txn id derived from the delivery (a one-part reply keeps the delivery's own, as before), and
      // the homeserver deduplicates by it: whatever failed may be sent again under the same id.
      const send = (delivery: OutboundDelivery) => {
        const txn = txnIdOf(delivery)
        return sendInParts({
          delivery,
          limit: MESSAGE_LIMIT,
          sendPart: ({ text, index, count }) =>
            Effect.asVoid(patiently(api.send(token, delivery.place, count === 1 ? txn : `${txn}.${index}`, {
              msgtype: delivery.kind === "notice" ? "m.notice" : "m.text",
              body: text,
              ...formattedContent(text)
            }))),
          sendAudio: (audio: OutboundAudio) => sendMedia(delivery.place, `${txn}.audio`, audio.bytes, audio.mimeType, `reply.${audio.format === "wav" ? "wav" : "ogg"}`, "m.audio"),
          sendFile: (file) => sendMedia(delivery.place, `${txn}.file${file.n}`, file.bytes, file.mimeType, file.name, msgtypeOfFile(file)),
          failure: (e: MatrixApi.MatrixApiError) => ({ notSent: true, reason: e.message }),
          resendUnknown: true
        })
      }
      const typing = (on: boolean, roomId: string) => api.typing(token, roomId, userId, on, TYPING_TIMEOUT).pipe(Effect.ignore)
      // One renewing typing fiber per room with a running turn (turns of a room run one at a time).
      const typingIn = yield* FiberMap.make<string>()
      const progress = (event: ProgressEvent) =>
        Effect.gen(function* () {
          if (event.type === "delta") return
          if (event.type === "started") {
            yield* FiberMap.run(typingIn, event.place, keepTyping(typing(true, event.place), TYPING_RENEW))
          } else {
            yield* FiberMap.remove(typingIn, event.place)
            yield* typing(false, event.place)
          }
        })
      const services = yield* Effect.context<DeliveryStore>()
      const channel = nativeChannel({
        name,
        idempotentResends: true,
        // m.audio takes any audio type; WAV needs no encoder.
        audio: "wav",
        files: true,
        send: runtimeSend(`matrix connection '${name}'`, () => !closed, services, send),
        progress: (event) => (closed ? Effect.void : Effect.asVoid(progress(event)))
      })
      yield* context.bindChannel(channel)

      /** Every text message of a routed room in one sync, oldest first, with limited timelines backfilled. */
      const messagesOf = (res: MatrixApi.SyncResponse) =>
        Effect.gen(function* () {
          const out: Array<{ roomId: string; event: MatrixApi.RoomEvent }> = []
          for (const [roomId, joined] of Object.entries(res.rooms?.join ?? {})) {
            if (!routed(roomId)) continue
            let events: ReadonlyArray<MatrixApi.RoomEvent> = joined.timeline?.events ?? []
            const gap = joined.timeline?.limited === true && joined.timeline.prev_batch !== undefined && since !== undefined
            if (gap) events = [...(yield* backfill(roomId, joined.timeline!.prev_batch!, since!)), ...events]
            const seen = new Set<string>()
            for (const event of events) {
              if (seen.has(event.event_id)) continue
              seen.add(event.event_id)
              const body = event.content?.["body"]
              const msgtype = event.content?.["msgtype"]
              if (event.type !== "m.room.message" || typeof body !== "string" || typeof msgtype !== "string" || !(TEXT_TYPES.has(msgtype) || FILE_TYPES.has(msgtype))) continue
              if (event.sender === userId) continue
              // An edit repeats the message with a "* " body: the original was answered already.
              const relation = event.content?.["m.relates_to"] as { rel_type?: unknown } | undefined
              if (relation?.rel_type === "m.replace") continue
              out.push({ roomId, event })
            }
          }
          return out
        })

      const backfill = (roomId: string, from: string, to: string) =>
        Effect.gen(function* () {
          const older: Array<MatrixApi.RoomEvent> = []
          let at = from
          for (let page = 0; page < MAX_BACKFILL_PAGES; page++) {
            const r = yield* api.messagesBack(token, roomId, at, to)
            older.push(...r.chunk)
            if (r.chunk.length === 0 || r.end === undefined || r.end === at) break
            at = r.end
          }
          return older.reverse()
        })

      const joinInvites = (res: MatrixApi.SyncResponse) =>
        Effect.forEach(Object.keys(res.rooms?.invite ?? {}).filter(routed), (roomId) =>
          // A refused join (403, 404) will not get better; anything else fails the sync step and is retried.
          api.join(token, roomId).pipe(Effect.catchIf((e) => e.permanent, () => Effect.void)), { discard: true })

      // Joined members per room, for triggers: from the sync's summaries, else asked once.
      const members = new Map<string, number>()
      const noteSummaries = (res: MatrixApi.SyncResponse) => {
        for (const [roomId, joined] of Object.entries(res.rooms?.join ?? {})) {
          const count = joined.summary?.["m.joined_member_count"]
          if (count !== undefined) members.set(roomId, count)
        }
      }
      const isDirect = (roomId: string) => {
        const known = members.get(roomId)
        if (known !== undefined) return Effect.succeed(known <= 2)
        return api.joinedMemberCount(token, roomId).pipe(
          Effect.tap((n) => Effect.sync(() => members.set(roomId, n))),
          Effect.map((n) => n <= 2),
          Effect.mapError(fail("joined_members"))
        )
      }
      const triggered = (roomId: string, event: MatrixApi.RoomEvent) =>
        Effect.map(isDirect(roomId), (direct) => {
          const mentions = event.content?.["m.mentions"] as { user_ids?: unknown } | undefined
          return isTriggered({
            text: event.content!["body"] as string,
            direct,
            trigger: routeOf(routes, roomId)?.trigger,
            handle: userId,
            repliesToBot: false,
            mentionsBot: Array.isArray(mentions?.user_ids) && mentions.user_ids.includes(userId)
          })
        })

      /**
       * The file of a file message, downloaded from the homeserver within `files:`; or why not.
       * What the event says (size, type) is judged first: a file refused by it is never fetched.
       */
      const fileOf = (event: MatrixApi.RoomEvent) =>
        Effect.gen(function* () {
          const content = event.content!
          const fileName = typeof content["filename"] === "string" && content["filename"] !== "" ? content["filename"] : String(content["body"])
          const shown = safeName(fileName)
          const info = (typeof content["info"] === "object" && content["info"] !== null ? content["info"] : {}) as { mimetype?: unknown; size?: unknown }
          const type = typeof info.mimetype === "string" && info.mimetype !== "" ? info.mimetype : mimeTypeOf(fileName)
          const url = content["url"]
          if (typeof url !== "string") return { refused: [{ name: shown, reason: content["file"] !== undefined ? "an encrypted file (not supported)" : "no media URL" }] }
          const why = refusalOf(typeof info.size === "number" ? info.size : 0, type, limits)
          if (why !== undefined) return { refused: [{ name: shown, reason: why }] }
          const got = yield* patiently(api.download(token, url, limits.maxBytes)).pipe(
            Effect.timeoutFail({ duration: DOWNLOAD_TIMEOUT, onTimeout: () => new MatrixApi.MatrixApiError({ operation: "download_timeout" }) }),
            Effect.either
          )
          if (got._tag === "Left") {
            yield* Effect.logWarning("matrix file not downloaded").pipe(Effect.annotateLogs({ event: event.event_id, reason: got.left.message }))
            return { refused: [{ name: shown, reason: "could not be downloaded from the homeserver" }] }
          }
          if (got.right === undefined) return { refused: [{ name: shown, reason: `too large (the limit is ${limits.maxBytes} bytes)` }] }
          return { files: [{ name: fileName, mimeType: type, bytes: got.right }] }
        })

      const step = Effect.gen(function* () {
        const first = since === undefined
        const res = yield* api.sync(token, since, polling ? Duration.millis(settings.syncTimeoutMs) : Duration.zero, MatrixApi.SYNC_FILTER)
        yield* joinInvites(res)
        noteSummaries(res)
        if (!first) {
          const messages = yield* messagesOf(res)
          order += 1
          // The page in one group commit: the messages in order, the sync token with the last.
          const inputs: Array<IngestMessageInput> = []
          for (let i = 0; i < messages.length; i++) {
            const { roomId, event } = messages[i]!
            const answered = yield* triggered(roomId, event)
            const file = FILE_TYPES.has(event.content!["msgtype"] as string) ? yield* fileOf(event) : undefined
            inputs.push({
              connection: name,
              place: roomId,
              providerEventId: event.event_id,
              sender: event.sender,
              text: file === undefined ? event.content!["body"] as string : captionOf(event.content!),
              ...(file?.files !== undefined ? { files: file.files } : {}),
              metadata: {
                msgtype: event.content!["msgtype"],
                ...(file?.refused !== undefined ? { filesRefused: file.refused } : {}),
                ...(event.origin_server_ts !== undefined ? { originServerTs: event.origin_server_ts } : {}),
                ...(answered ? {} : untriggeredMetadata)
              },
              ...(i === messages.length - 1 ? { cursor: { stream: SYNC_STREAM, position: res.next_batch, order } } : {})
            })
          }
          if (inputs.length > 0) yield* context.ingestMany(inputs).pipe(Effect.mapError(fail("ingest")))
        }
        since = res.next_batch
        polling = true
        ready = true
      })

      const backoff = Schedule.exponential("100 millis").pipe(Schedule.union(Schedule.spaced(Duration.millis(settings.maxBackoffMs))))
      const syncLoop = step.pipe(
        // A defect (a bug, an unexpected answer) is logged, then retried like a failure: the loop must not die silently.
        Effect.catchAllDefect((defect) =>
          Effect.logError("matrix sync step died", Cause.die(defect)).pipe(
            Effect.zipRight(new MatrixRuntimeError({ connection: name, operation: "sync", reason: "unexpected failure" }))
          )
        ),
        Effect.tapError(() => Effect.sync(() => (ready = false))),
        Effect.retry(backoff),
        Effect.forever,
        Effect.annotateLogs({ connection: name })
      )
      // In the runtime's scope: it runs until the runtime closes (interrupting the in-flight /sync).
      yield* Effect.forkScoped(syncLoop)
    })

  return native({ name, start, isReady: Effect.sync(() => ready && !closed) })
}
