/**
 * The few Bot API calls the Telegram runtime needs, through grammy's `Api` client: getMe,
 * getUpdates, setWebhook, deleteWebhook, getWebhookInfo, sendMessage, sendChatAction, sendVoice,
 * sendDocument and getFile (a file's bytes
 * come from the Bot API's file URL, read with a cap). grammy is loaded on first use (an optional
 * dependency: the CLI bundle must load without it). Updates come back as `unknown` and are
 * decoded one by one by the runtime, so one malformed update cannot spoil a batch.
 *
 * Failures are `TelegramApiError` with the method, Telegram's error code and `retry_after`; never
 * the token (it is part of every URL) or a message's content.
 */
import { Effect, Schema } from "effect"
import type { Api } from "grammy"
import { readCapped } from "../../files/download.js"
import { importModule } from "../../system/import-module.js"

export class TelegramApiError extends Schema.TaggedError<TelegramApiError>()("TelegramApiError", {
  operation: Schema.String,
  /** Telegram's `error_code`; absent when the Bot API could not be reached or answered garbage. */
  status: Schema.optional(Schema.Number),
  /** Telegram's `description` (an error text of the platform, never the content sent). */
  description: Schema.optional(Schema.String),
  /** `parameters.retry_after` of a 429, in seconds. */
  retryAfterSeconds: Schema.optional(Schema.Number),
  /** The request surely never reached the server (connection refused, DNS): a resend cannot duplicate. */
  notSent: Schema.optionalWith(Schema.Boolean, { default: () => false })
}) {
  override get message() {
    return `telegram ${this.operation} failed${this.status !== undefined ? ` (${this.status}${this.description ? `: ${this.description}` : ""})` : ": Bot API unreachable"}`
  }
  /** 4xx other than 429: asking again will not help. */
  get permanent() {
    return this.status !== undefined && this.status >= 400 && this.status < 500 && this.status !== 429
  }
}

export interface BotIdentity {
  readonly id: number
  readonly username: string | undefined
}

/** What getWebhookInfo says: the url set ("" when none), the updates waiting, the last delivery error. */
export interface WebhookInfo {
  readonly url: string
  readonly pendingUpdateCount: number
  readonly lastErrorDate: number | undefined
  readonly lastErrorMessage: string | undefined
}

/** The only update type the runtime reads (polling and webhook alike). */
export const ALLOWED_UPDATES = ["message"] as const

export interface TelegramApi {
  readonly getMe: Effect.Effect<BotIdentity, TelegramApiError>
  /** One long-poll: updates from `offset` on (undecoded), waiting up to `timeoutSeconds` for one. */
  readonly getUpdates: (offset: number | undefined, timeoutSeconds: number) => Effect.Effect<ReadonlyArray<unknown>, TelegramApiError>
  /**
   * Registers the webhook: Telegram POSTs `ALLOWED_UPDATES` to `url` with `secretToken` in the
   * X-Telegram-Bot-Api-Secret-Token header, one request at a time (max_connections 1, so updates
   * arrive in order); pending updates are kept.
   */
  readonly setWebhook: (url: string, secretToken: string) => Effect.Effect<void, TelegramApiError>
  /** Removes the webhook, keeping pending updates (getUpdates returns them next). */
  readonly deleteWebhook: Effect.Effect<void, TelegramApiError>
  readonly getWebhookInfo: Effect.Effect<WebhookInfo, TelegramApiError>
  /** Sends one message; resolves with its message id. */
  readonly sendMessage: (chatId: string, text: string, parseMode: "MarkdownV2" | undefined) => Effect.Effect<number, TelegramApiError>
  readonly sendChatAction: (chatId: string, action: "typing") => Effect.Effect<void, TelegramApiError>
  /** Sends a voice note (OGG/Opus); resolves with its message id. */
  readonly sendVoice: (chatId: string, ogg: Uint8Array) => Effect.Effect<number, TelegramApiError>
  /** Sends a file as a document; resolves with its message id. */
  readonly sendDocument: (chatId: string, bytes: Uint8Array, fileName: string) => Effect.Effect<number, TelegramApiError>
  /** The bytes of a file a user sent (getFile, then its file URL), refused past `maxBytes` without reading further. */
  readonly download: (fileId: string, maxBytes: number) => Effect.Effect<Uint8Array, TelegramApiError>
}

/** Errors of node's fetch stack that mean the request never left this machine. */
const NOT_SENT_CODES = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH"])

const codeOf = (e: unknown): string | undefined => {
  for (let at: unknown = e, depth = 0; at !== null && typeof at === "object" && depth < 4; depth++) {
    const code = (at as { code?: unknown }).code
    if (typeof code === "string") return code
    at = (at as { error?: unknown; cause?: unknown }).error ?? (at as { cause?: unknown }).cause
  }
  return undefined
}

const toError = (operation: string) => (e: unknown): TelegramApiError => {
  if (e !== null && typeof e === "object" && (e as { name?: unknown }).name === "GrammyError") {
    const g = e as { error_code?: unknown; description?: unknown; parameters?: { retry_after?: unknown } }
    return new TelegramApiError({
      operation,
      ...(typeof g.error_code === "number" ? { status: g.error_code } : {}),
      ...(typeof g.description === "string" ? { description: g.description.slice(0, 200) } : {}),
      ...(typeof g.parameters?.retry_after === "number" ? { retryAfterSeconds: g.parameters.retry_after } : {})
    })
  }
  const code = codeOf(e)
  return new TelegramApiError({ operation, notSent: code !== undefined && NOT_SENT_CODES.has(code) })
}

/** grammy types its signal with the abort-controller shim; node's AbortSignal is what it gets at run time. */
type GrammySignal = NonNullable<Parameters<Api["getMe"]>[0]>

const MessageSent = Schema.Struct({ message_id: Schema.Number })
const FileInfo = Schema.Struct({ file_path: Schema.String.pipe(Schema.pattern(/^[\w./-]{1,512}$/)), file_size: Schema.optional(Schema.Number) })

const Info = Schema.Struct({
  url: Schema.optionalWith(Schema.String, { default: () => "" }),
  pending_update_count: Schema.optionalWith(Schema.Number, { default: () => 0 }),
  last_error_date: Schema.optional(Schema.Number),
  last_error_message: Schema.optional(Schema.String)
})
const Me = Schema.Struct({ id: Schema.Number, username: Schema.optional(Schema.String) })

/** grammy itself, or a typed failure naming the missing package. */
export const loadGrammy = Effect.tryPromise({
  try: () => importModule<typeof import("grammy")>("grammy"),
  catch: () => new TelegramApiError({ operation: "load grammy", description: "the optional package 'grammy' is not installed (npm install grammy)" })
})

export const make = (token: string, apiRoot: string): Effect.Effect<TelegramApi, TelegramApiError> =>
  Effect.gen(function* () {
    const grammy = yield* loadGrammy
    // Requests are bounded by the caller (an Effect deadline or interruption aborts the signal).
    const root = apiRoot.replace(/\/+$/, "")
    const api: Api = new grammy.Api(token, { apiRoot: root, timeoutSeconds: 120 })
    const call = <A>(operation: string, run: (signal: GrammySignal) => Promise<A>) =>
      Effect.tryPromise({ try: (signal) => run(signal as unknown as GrammySignal), catch: toError(operation) })
    const decoded = <A, I>(operation: string, schema: Schema.Schema<A, I>) => (u: unknown) =>
      Schema.decodeUnknown(schema)(u).pipe(Effect.mapError(() => new TelegramApiError({ operation, description: "unexpected answer" })))

    return {
      getMe: call("getMe", (signal) => api.getMe(signal)).pipe(
        Effect.flatMap(decoded("getMe", Me)),
        Effect.map((me) => ({ id: me.id, username: me.username }))
      ),
      getUpdates: (offset, timeoutSeconds) =>
        call("getUpdates", (signal) =>
          api.getUpdates({ ...(offset !== undefined ? { offset } : {}), timeout: timeoutSeconds, allowed_updates: [...ALLOWED_UPDATES] }, signal)
        ).pipe(Effect.flatMap((u) => (Array.isArray(u) ? Effect.succeed(u as ReadonlyArray<unknown>) : new TelegramApiError({ operation: "getUpdates", description: "unexpected answer" })))),
      setWebhook: (url, secretToken) =>
        call("setWebhook", (signal) =>
          api.setWebhook(url, { secret_token: secretToken, allowed_updates: [...ALLOWED_UPDATES], drop_pending_updates: false, max_connections: 1 }, signal)
        ).pipe(Effect.asVoid),
      deleteWebhook: call("deleteWebhook", (signal) => api.deleteWebhook({ drop_pending_updates: false }, signal)).pipe(Effect.asVoid),
      getWebhookInfo: call("getWebhookInfo", (signal) => api.getWebhookInfo(signal)).pipe(
        Effect.flatMap(decoded("getWebhookInfo", Info)),
        Effect.map((i) => ({ url: i.url, pendingUpdateCount: i.pending_update_count, lastErrorDate: i.last_error_date, lastErrorMessage: i.last_error_message?.slice(0, 200) }))
      ),
      sendMessage: (chatId, text, parseMode) =>
        call("sendMessage", (signal) => api.sendMessage(chatId, text, { ...(parseMode !== undefined ? { parse_mode: parseMode } : {}), link_preview_options: { is_disabled: true } }, signal)).pipe(
          Effect.flatMap(decoded("sendMessage", MessageSent)),
          Effect.map((m) => m.message_id)
        ),
      sendChatAction: (chatId, action) => call("sendChatAction", (signal) => api.sendChatAction(chatId, action, {}, signal)).pipe(Effect.asVoid),
      sendDocument: (chatId, bytes, fileName) =>
        call("sendDocument", (signal) => api.sendDocument(chatId, new grammy.InputFile(bytes, fileName), {}, signal)).pipe(
          Effect.flatMap(decoded("sendDocument", MessageSent)),
          Effect.map((m) => m.message_id)
        ),
      download: (fileId, maxBytes) =>
        call("getFile", (signal) => api.getFile(fileId, signal)).pipe(
          Effect.flatMap(decoded("getFile", FileInfo)),
          Effect.filterOrFail((f) => f.file_size === undefined || f.file_size <= maxBytes, () => new TelegramApiError({ operation: "getFile", description: "file too large" })),
          Effect.flatMap((f) =>
            Effect.tryPromise({
              try: async (signal) => {
                const res = await fetch(`${root}/file/bot${token}/${f.file_path}`, { signal })
                if (!res.ok) throw Object.assign(new Error("download refused"), { status: res.status })
                return await readCapped(res, maxBytes)
              },
              catch: (e) => new TelegramApiError({ operation: "download", ...(typeof (e as { status?: unknown }).status === "number" ? { status: (e as { status: number }).status } : {}) })
            })),
          Effect.flatMap((bytes) => bytes === undefined ? new TelegramApiError({ operation: "download", description: "file too large" }) : Effect.succeed(bytes))
        ),
      sendVoice: (chatId, ogg) =>
        call("sendVoice", (signal) => api.sendVoice(chatId, new grammy.InputFile(ogg, "reply.ogg"), {}, signal)).pipe(
          Effect.flatMap(decoded("sendVoice", MessageSent)),
          Effect.map((m) => m.message_id)
        )
    }
  })
