/**
 * The few REST calls the Discord runtime needs, through discord.js's REST client (@discordjs/rest:
 * it waits out 429s by their Retry-After and rate-limit buckets itself, and retries 5xx answers
 * and dropped connections up to 3 times): who the bot is, send a message (text, or one file),
 * typing, and a channel's history after a message id; and the download of an attachment from the
 * CDN (plain fetch: its URLs are signed, the token never goes there). discord.js is loaded on first use (an optional dependency: the CLI
 * bundle must load without it). Messages come back as `unknown`, decoded one by one by the runtime.
 *
 * Failures are `DiscordApiError` with the operation, the HTTP status and Discord's error code;
 * never the token or a message's content.
 */
import { type Duration, Effect, Schema } from "effect"
import type { REST } from "discord.js"
import { readCapped } from "../../files/download.js"
import { importModule } from "../../system/import-module.js"

export class DiscordApiError extends Schema.TaggedError<DiscordApiError>()("DiscordApiError", {
  operation: Schema.String,
  /** The HTTP status of Discord's answer; absent when it could not be reached or did not answer. */
  status: Schema.optional(Schema.Number),
  /** Discord's JSON error code (50001 Missing Access, 10003 Unknown Channel, ...). */
  code: Schema.optional(Schema.Union(Schema.Number, Schema.String)),
  description: Schema.optional(Schema.String),
  /** The request surely never reached the server (connection refused, DNS): a resend cannot duplicate. */
  notSent: Schema.optionalWith(Schema.Boolean, { default: () => false })
}) {
  override get message() {
    return `discord ${this.operation} failed${this.status !== undefined ? ` (${this.status}${this.description ? `: ${this.description}` : ""})` : `: ${this.description ?? "the API is unreachable"}`}`
  }
  /** A 4xx: Discord answered and did not take the request (429s are waited out before this). */
  get refused() {
    return this.status !== undefined && this.status >= 400 && this.status < 500
  }
}

/** An attachment not downloaded: `too_large` (past the cap), `download_timeout` (no end within the deadline), `download_failed`. */
export class DiscordDownloadError extends Schema.TaggedError<DiscordDownloadError>()("DiscordDownloadError", {
  code: Schema.Literal("too_large", "download_timeout", "download_failed"),
  /** The CDN's HTTP status, when it answered with an error. */
  status: Schema.optional(Schema.Number)
}) {
  override get message() {
    return `discord attachment ${this.code}${this.status !== undefined ? ` (${this.status})` : ""}`
  }
}

export interface BotIdentity {
  readonly id: string
  readonly username: string | undefined
}

export interface DiscordApi {
  readonly me: Effect.Effect<BotIdentity, DiscordApiError>
  /** Posts one message; `nonce` with `enforce_nonce` makes a repeat within Discord's window return the first. */
  readonly createMessage: (channelId: string, content: string, nonce: string) => Effect.Effect<string, DiscordApiError>
  /** Posts one file as its own message (multipart `payload_json` + `files[0]`), under a nonce like `createMessage`. */
  readonly createFileMessage: (channelId: string, file: UploadFile, nonce: string) => Effect.Effect<string, DiscordApiError>
  readonly typing: (channelId: string) => Effect.Effect<void, DiscordApiError>
  /** Up to 100 messages of a channel after a message id (undecoded, in Discord's order: newest first). */
  readonly messagesAfter: (channelId: string, after: string) => Effect.Effect<ReadonlyArray<unknown>, DiscordApiError>
}

export interface UploadFile {
  readonly name: string
  readonly mimeType: string
  readonly bytes: Uint8Array
}

/** Errors of node's fetch stack that mean the request never left this machine. */
const NOT_SENT_CODES = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH"])

const codeOf = (e: unknown): string | undefined => {
  for (let at: unknown = e, depth = 0; at !== null && typeof at === "object" && depth < 4; depth++) {
    const code = (at as { code?: unknown }).code
    if (typeof code === "string") return code
    at = (at as { cause?: unknown }).cause
  }
  return undefined
}

const toError = (operation: string) => (e: unknown): DiscordApiError => {
  const err = (e ?? {}) as { name?: unknown; status?: unknown; code?: unknown; message?: unknown }
  // DiscordAPIError's name carries Discord's code: "DiscordAPIError[50001]".
  const kind = typeof err.name === "string" ? err.name.replace(/\[.*$/, "") : undefined
  if (kind === "DiscordAPIError" || kind === "HTTPError") {
    return new DiscordApiError({
      operation,
      ...(typeof err.status === "number" ? { status: err.status } : {}),
      ...(typeof err.code === "number" || (typeof err.code === "string" && kind === "DiscordAPIError") ? { code: err.code as number | string } : {}),
      ...(typeof err.message === "string" ? { description: err.message.slice(0, 200) } : {})
    })
  }
  const code = codeOf(e)
  return new DiscordApiError({
    operation,
    notSent: code !== undefined && NOT_SENT_CODES.has(code),
    description: err.name === "AbortError" ? "no answer in time" : code ?? "the API is unreachable"
  })
}

const Me = Schema.Struct({ id: Schema.String, username: Schema.optional(Schema.String) })
const Created = Schema.Struct({ id: Schema.String })

/**
 * The multipart body of a file message, encoded to bytes here rather than handed to discord.js as
 * `files` (a FormData). The reason: @discordjs/rest sends through its own undici 6, whose `request`
 * uses the process-wide global dispatcher; undici 7 (loaded by @effect/platform-node's
 * NodeClusterSocket/NodeHttpClient and by @slack/socket-mode) installs its Agent as that global
 * dispatcher on load when it comes first, as it does in the host and in tests. That Agent encodes
 * a FormData body with undici 7's own `extractBody`, which does not recognise the FormData of
 * another undici copy (node's global one, which discord.js uses) and throws "action is not a
 * function" before anything is sent. Bytes go through every undici alike. Node's own Response
 * encodes its own FormData (boundary, quoted file name, part headers) as fetch would send it.
 */
const multipartOf = async (payload: unknown, file: UploadFile): Promise<{ readonly body: Uint8Array; readonly contentType: string }> => {
  const form = new FormData()
  form.append("payload_json", JSON.stringify(payload))
  form.append("files[0]", new Blob([file.bytes], { type: file.mimeType }), file.name)
  const encoded = new Response(form)
  return { body: new Uint8Array(await encoded.arrayBuffer()), contentType: encoded.headers.get("content-type") ?? "multipart/form-data" }
}

/**
 * Downloads an attachment from its CDN URL (the caller checked its origin): at most `maxBytes`,
 * within `timeout` (the request is aborted then), redirects refused (they could lead off the CDN).
 */
export const download = (url: string, maxBytes: number, timeout: Duration.DurationInput): Effect.Effect<Uint8Array, DiscordDownloadError> =>
  Effect.tryPromise({
    try: async (signal) => {
      const res = await fetch(url, { signal, redirect: "error" })
      if (!res.ok) {
        await res.body?.cancel()
        throw new DiscordDownloadError({ code: "download_failed", status: res.status })
      }
      const bytes = await readCapped(res, maxBytes)
      if (bytes === undefined) throw new DiscordDownloadError({ code: "too_large" })
      return bytes
    },
    catch: (e) => (e instanceof DiscordDownloadError ? e : new DiscordDownloadError({ code: "download_failed" }))
  }).pipe(
    Effect.timeoutFail({ duration: timeout, onTimeout: () => new DiscordDownloadError({ code: "download_timeout" }) })
  )

/** discord.js itself, or a typed failure naming the missing package. */
export const loadDiscord = Effect.tryPromise({
  try: () => importModule<typeof import("discord.js")>("discord.js"),
  catch: () => new DiscordApiError({ operation: "load discord.js", description: "the optional package 'discord.js' is not installed (npm install discord.js)" })
})

/** The REST client discord.js makes for a token and an API base (`https://discord.com/api` or a fake). */
export const restOf = (token: string, apiRoot: string) =>
  Effect.map(loadDiscord, (d) => new d.REST({ api: apiRoot.replace(/\/+$/, "") }).setToken(token))

export const make = (rest: REST): DiscordApi => {
  const call = <A>(operation: string, run: (signal: AbortSignal) => Promise<A>) => Effect.tryPromise({ try: run, catch: toError(operation) })
  const decoded = <A, I>(operation: string, schema: Schema.Schema<A, I>) => (u: unknown) =>
    Schema.decodeUnknown(schema)(u).pipe(Effect.mapError(() => new DiscordApiError({ operation, description: "unexpected answer" })))
  return {
    me: call("users/@me", (signal) => rest.get("/users/@me", { signal })).pipe(Effect.flatMap(decoded("users/@me", Me)), Effect.map((me) => ({ id: me.id, username: me.username }))),
    createMessage: (channelId, content, nonce) =>
      call("create message", (signal) =>
        rest.post(`/channels/${channelId}/messages`, {
          body: { content, nonce, enforce_nonce: true, allowed_mentions: { parse: [] } },
          signal
        })
      ).pipe(Effect.flatMap(decoded("create message", Created)), Effect.map((m) => m.id)),
    createFileMessage: (channelId, file, nonce) =>
      call("create file message", async (signal) => {
        const { body, contentType } = await multipartOf({
          content: "",
          nonce,
          enforce_nonce: true,
          allowed_mentions: { parse: [] },
          attachments: [{ id: 0, filename: file.name }]
        }, file)
        return rest.post(`/channels/${channelId}/messages`, { body, passThroughBody: true, headers: { "Content-Type": contentType }, signal })
      }).pipe(Effect.flatMap(decoded("create file message", Created)), Effect.map((m) => m.id)),
    typing: (channelId) => call("typing", (signal) => rest.post(`/channels/${channelId}/typing`, { signal })).pipe(Effect.asVoid),
    messagesAfter: (channelId, after) =>
      call("channel messages", (signal) => rest.get(`/channels/${channelId}/messages`, { query: new URLSearchParams({ after, limit: "100" }), signal })).pipe(
        Effect.flatMap((u) => (Array.isArray(u) ? Effect.succeed(u as ReadonlyArray<unknown>) : new DiscordApiError({ operation: "channel messages", description: "unexpected answer" })))
      )
  }
}
