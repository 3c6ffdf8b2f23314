/**
 * Files through Slack, both ways.
 *
 * In: the `files` of a message event (subtype `file_share`) are judged from what the event says
 * first (deleted, external, size, type, how many, where the URL points) and only those that pass
 * are downloaded from `url_private_download` with the bot token, read up to `files.maxBytes`,
 * under a deadline. The token goes only to Slack's file host (`https://files.slack.com`, or the
 * origin of the configured API base, which is the fake's in tests); a URL anywhere else is refused
 * without a request, and a redirect is never followed (Slack answers one when the token lacks
 * `files:read`).
 *
 * Out: one file is one upload through Slack's external flow: `files.getUploadURLExternal`
 * (name, length), the bytes POSTed to the `upload_url` Slack gave (it is the credential: no token
 * goes with them), then `files.completeUploadExternal`, which shares the file in the channel (and
 * thread). Nothing shows in the channel before that last call, so a failure of the first two means
 * "not sent"; only a completion without an answer leaves the outcome unknown.
 */
import { Duration, Effect, Either, Schema } from "effect"
import type * as Bolt from "@slack/bolt"
import type { FilesConfig } from "../../config/files.js"
import type { RefusedFile } from "../../files/inbox.js"
import { mimeTypeOf, refusalOf, safeName } from "../../files/names.js"
import { SlackApiError, toSlackError } from "./SlackApi.js"
import { readCapped } from "../../files/download.js"

/** From the request to the last byte of one file a user sent. */
const DOWNLOAD_TIMEOUT = Duration.seconds(60)
/** The bytes of one outbox file to the upload URL (the outbox gives a whole send 30 s). */
const UPLOAD_TIMEOUT = Duration.seconds(20)
/** Slack's own file host in production. */
export const SLACK_FILES_ORIGIN = "https://files.slack.com"

const SlackFile = Schema.Struct({
  id: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(64)),
  name: Schema.optional(Schema.String),
  title: Schema.optional(Schema.String),
  mimetype: Schema.optional(Schema.String),
  size: Schema.optional(Schema.NonNegative),
  mode: Schema.optional(Schema.String),
  is_external: Schema.optional(Schema.Boolean),
  url_private_download: Schema.optional(Schema.String),
  url_private: Schema.optional(Schema.String)
})
const decodeFile = Schema.decodeUnknownEither(SlackFile)

/** A file that passed the checks on the event's metadata: to be downloaded. */
export interface FileToFetch {
  readonly name: string
  readonly mimeType: string
  readonly url: string
}

/** The origins the bot token may be sent to: Slack's file host, and the configured API base's. */
export const fileOrigins = (apiUrl: string): ReadonlySet<string> => new Set([SLACK_FILES_ORIGIN, new URL(apiUrl).origin])

const originOf = (url: string): string | undefined => {
  try {
    return new URL(url).origin
  } catch {
    return undefined
  }
}

/**
 * Which of a message's files to download, and which are refused (with why), from the event alone:
 * nothing is fetched here. A malformed entry is refused, not the message.
 */
export const planDownloads = (files: ReadonlyArray<unknown>, limits: FilesConfig, origins: ReadonlySet<string>) => {
  const fetch: Array<FileToFetch> = []
  const refused: Array<RefusedFile> = []
  for (const raw of files) {
    const decoded = decodeFile(raw)
    if (Either.isLeft(decoded)) {
      refused.push({ name: "file", reason: "malformed file entry" })
      continue
    }
    const f = decoded.right
    const name = f.name !== undefined && f.name !== "" ? f.name : f.title !== undefined && f.title !== "" ? f.title : `file-${f.id}`
    const shown = safeName(name)
    const mimeType = f.mimetype !== undefined && f.mimetype !== "" ? f.mimetype : mimeTypeOf(name)
    const url = f.url_private_download ?? f.url_private
    const origin = url === undefined ? undefined : originOf(url)
    const why = f.mode === "tombstone"
      ? "deleted in Slack"
      : f.mode === "hidden_by_limit"
      ? "hidden by the Slack workspace's plan"
      : f.is_external === true || f.mode === "external"
      ? "an external file (not stored in Slack)"
      : fetch.length >= limits.maxFiles
      ? `too many files (the limit is ${limits.maxFiles})`
      : refusalOf(f.size ?? 0, mimeType, limits) ??
        (url === undefined
          ? "no download URL"
          : origin === undefined || !origins.has(origin)
          ? "its URL is not on Slack's file host (not requested)"
          : undefined)
    if (why !== undefined) refused.push({ name: shown, reason: why })
    else fetch.push({ name, mimeType, url: url! })
  }
  return { fetch, refused }
}

/** Why a download gave no file, in words for the agent (never the URL or the token). */
export class FileNotDownloaded extends Schema.TaggedError<FileNotDownloaded>()("FileNotDownloaded", { reason: Schema.String }) {
  override get message() {
    return `slack file download: ${this.reason}`
  }
}

/**
 * One file's bytes from Slack's file host, with the bot token, capped at `maxBytes`, within
 * DOWNLOAD_TIMEOUT (`file_download_timeout`). The caller has checked the URL's origin.
 */
export const downloadFile = (file: FileToFetch, token: string, maxBytes: number): Effect.Effect<Uint8Array, FileNotDownloaded> =>
  Effect.tryPromise({
    try: async (signal) => {
      const res = await fetch(file.url, { headers: { authorization: `Bearer ${token}` }, redirect: "manual", signal })
      if (res.status !== 200) {
        await res.body?.cancel().catch(() => undefined)
        return res.status >= 300 && res.status < 400
          ? "Slack redirected the download (is the app's files:read scope granted?)"
          : `could not be downloaded from Slack (HTTP ${res.status})`
      }
      // Without access Slack may answer its sign-in page instead of the file.
      if ((res.headers.get("content-type") ?? "").startsWith("text/html") && !file.mimeType.startsWith("text/html")) {
        await res.body?.cancel().catch(() => undefined)
        return "Slack answered a web page instead of the file (is the app's files:read scope granted?)"
      }
      return (await readCapped(res, maxBytes)) ?? `too large (the limit is ${maxBytes} bytes)`
    },
    catch: () => new FileNotDownloaded({ reason: "could not be downloaded from Slack (no answer)" })
  }).pipe(
    Effect.timeoutFail({ duration: DOWNLOAD_TIMEOUT, onTimeout: () => new FileNotDownloaded({ reason: "could not be downloaded from Slack (file_download_timeout)" }) }),
    Effect.flatMap((r) => (typeof r === "string" ? new FileNotDownloaded({ reason: r }) : Effect.succeed(r)))
  )

export interface ReceivedFiles {
  readonly files: ReadonlyArray<{ readonly name: string; readonly mimeType: string; readonly bytes: Uint8Array }>
  readonly refused: ReadonlyArray<RefusedFile>
}

/**
 * A message's files: those that pass the checks downloaded one after the other (a failed one is
 * refused with its reason and logged), for ingest to save in the inbox.
 */
export const receiveFiles = (files: ReadonlyArray<unknown>, options: { readonly token: string; readonly limits: FilesConfig; readonly origins: ReadonlySet<string> }) =>
  Effect.gen(function* () {
    const plan = planDownloads(files, options.limits, options.origins)
    const received: Array<ReceivedFiles["files"][number]> = []
    const refused: Array<RefusedFile> = [...plan.refused]
    for (const file of plan.fetch) {
      const got = yield* Effect.either(downloadFile(file, options.token, options.limits.maxBytes))
      if (got._tag === "Right") received.push({ name: file.name, mimeType: file.mimeType, bytes: got.right })
      else refused.push({ name: safeName(file.name), reason: got.left.reason })
    }
    if (refused.length > 0) yield* Effect.logWarning("slack files refused").pipe(Effect.annotateLogs({ reasons: refused.map((r) => r.reason) }))
    return { files: received, refused } satisfies ReceivedFiles
  })

/** The steps of an upload before the file is shared: a failure there means Slack shows nothing. */
const BEFORE_SHARE = new Set(["files.getUploadURLExternal", "file upload"])
/** Whether a failed upload surely left nothing in the channel. */
export const notShared = (e: SlackApiError): boolean => BEFORE_SHARE.has(e.operation)

const UploadTicket = Schema.Struct({ upload_url: Schema.String, file_id: Schema.String.pipe(Schema.minLength(1)) })

export interface Upload {
  readonly channel: string
  readonly threadTs: string | undefined
  readonly name: string
  readonly bytes: Uint8Array
}

/**
 * The three calls of one upload, each through `call` (the runtime's retry of 429s and requests
 * that never left). The upload URL must be on `origins` too: the bytes go nowhere else.
 */
export const uploadFile = (
  client: Bolt.webApi.WebClient,
  upload: Upload,
  origins: ReadonlySet<string>,
  call: <A>(effect: Effect.Effect<A, SlackApiError>) => Effect.Effect<A, SlackApiError>
): Effect.Effect<void, SlackApiError> =>
  Effect.gen(function* () {
    const { bytes, channel, name, threadTs } = upload
    const ticket = yield* call(Effect.tryPromise({
      try: () => client.files.getUploadURLExternal({ filename: name, length: bytes.byteLength }),
      catch: toSlackError("files.getUploadURLExternal")
    })).pipe(
      Effect.flatMap((r) => Schema.decodeUnknown(UploadTicket)(r)),
      Effect.catchTag("ParseError", () => new SlackApiError({ operation: "files.getUploadURLExternal", error: "unexpected_answer" })),
      Effect.filterOrFail((t) => { const o = originOf(t.upload_url); return o !== undefined && origins.has(o) }, () => new SlackApiError({ operation: "file upload", error: "upload_url_not_on_slack" }))
    )
    yield* call(Effect.tryPromise({
      try: async (signal) => {
        const res = await fetch(ticket.upload_url, { method: "POST", headers: { "content-type": "application/octet-stream" }, body: bytes, redirect: "error", signal })
        await res.arrayBuffer().catch(() => undefined)
        return res.status
      },
      catch: toSlackError("file upload")
    }).pipe(
      Effect.timeoutFail({ duration: UPLOAD_TIMEOUT, onTimeout: () => new SlackApiError({ operation: "file upload", error: "file_upload_timeout" }) }),
      Effect.filterOrFail((status) => status === 200, (status) => new SlackApiError({ operation: "file upload", status }))
    ))
    yield* call(Effect.tryPromise({
      try: () => client.files.completeUploadExternal({ files: [{ id: ticket.file_id, title: name }], channel_id: channel, ...(threadTs !== undefined ? { thread_ts: threadTs } : {}) }),
      catch: toSlackError("files.completeUploadExternal")
    }))
  })
