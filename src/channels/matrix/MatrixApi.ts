/**
 * The few Matrix Client-Server API calls the connection runtime needs, over the platform
 * HttpClient: login, whoami, /sync, join, /messages, send, typing, media upload and download. Responses are decoded with Schema;
 * failures are `MatrixApiError` with the operation and the HTTP status (never a token or a body).
 */
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import { Duration, Effect, Schema, Stream } from "effect"

export class MatrixApiError extends Schema.TaggedError<MatrixApiError>()("MatrixApiError", {
  operation: Schema.String,
  /** The HTTP status, absent when the homeserver could not be reached or answered garbage. */
  status: Schema.optional(Schema.Number),
  errcode: Schema.optional(Schema.String),
  retryAfterMs: Schema.optional(Schema.Number),
  cause: Schema.optional(Schema.Defect)
}) {
  override get message() {
    return `matrix ${this.operation} failed${this.status !== undefined ? ` (${this.status}${this.errcode ? ` ${this.errcode}` : ""})` : ": homeserver unreachable"}`
  }
  /** 4xx other than 429: asking again will not help. */
  get permanent() {
    return this.status !== undefined && this.status >= 400 && this.status < 500 && this.status !== 429
  }
}

export const RoomEvent = Schema.Struct({
  type: Schema.String,
  event_id: Schema.String,
  sender: Schema.String,
  origin_server_ts: Schema.optional(Schema.Number),
  content: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
})
export type RoomEvent = typeof RoomEvent.Type

const Timeline = Schema.Struct({
  events: Schema.optionalWith(Schema.Array(RoomEvent), { default: () => [] }),
  limited: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  prev_batch: Schema.optional(Schema.String)
})

export const SyncResponse = Schema.Struct({
  next_batch: Schema.String,
  rooms: Schema.optional(Schema.Struct({
    join: Schema.optional(Schema.Record({
      key: Schema.String,
      value: Schema.Struct({
        timeline: Schema.optional(Timeline),
        // Sent (with lazy-loaded members) on the first sync of a room and when it changes.
        summary: Schema.optional(Schema.Struct({ "m.joined_member_count": Schema.optional(Schema.Number) }))
      })
    })),
    invite: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
  }))
})
export type SyncResponse = typeof SyncResponse.Type

const MessagesResponse = Schema.Struct({
  chunk: Schema.Array(RoomEvent),
  end: Schema.optional(Schema.String)
})

const LoginResponse = Schema.Struct({ user_id: Schema.String, access_token: Schema.String, device_id: Schema.optional(Schema.String) })
const WhoAmI = Schema.Struct({ user_id: Schema.String })
const EventIdResponse = Schema.Struct({ event_id: Schema.String })
const JoinedMembers = Schema.Struct({ joined: Schema.Record({ key: Schema.String, value: Schema.Unknown }) })
const UploadResponse = Schema.Struct({ content_uri: Schema.String.pipe(Schema.startsWith("mxc://")) })
const ErrorBody = Schema.Struct({ errcode: Schema.optional(Schema.String), retry_after_ms: Schema.optional(Schema.Number) })

/** Only what a sync needs: message timelines (bounded per room) and invites; no presence, no account data. */
export const SYNC_FILTER = JSON.stringify({
  presence: { types: [] },
  account_data: { types: [] },
  room: {
    timeline: { limit: 50 },
    state: { lazy_load_members: true, types: [] },
    ephemeral: { types: [] },
    account_data: { types: [] }
  }
})

export interface MatrixApi {
  readonly login: (user: string, password: string, deviceId: string) => Effect.Effect<typeof LoginResponse.Type, MatrixApiError>
  readonly whoami: (token: string) => Effect.Effect<string, MatrixApiError>
  readonly sync: (token: string, since: string | undefined, timeout: Duration.Duration, filter: string) => Effect.Effect<SyncResponse, MatrixApiError>
  readonly join: (token: string, roomId: string) => Effect.Effect<void, MatrixApiError>
  /** How many members have joined a room (the bot included). */
  readonly joinedMemberCount: (token: string, roomId: string) => Effect.Effect<number, MatrixApiError>
  /** One page of a room's events going back from `from`, stopping at `to`. */
  readonly messagesBack: (token: string, roomId: string, from: string, to: string) => Effect.Effect<typeof MessagesResponse.Type, MatrixApiError>
  readonly send: (token: string, roomId: string, txnId: string, content: Record<string, unknown>) => Effect.Effect<string, MatrixApiError>
  /** Uploads a file to the media repository; answers its `mxc://` URI. */
  readonly upload: (token: string, bytes: Uint8Array, contentType: string, filename: string) => Effect.Effect<string, MatrixApiError>
  /**
   * The bytes of an `mxc://` URI from the homeserver's authenticated media API, read up to
   * `maxBytes`: `undefined` when the file is larger (the download is cut off there).
   */
  readonly download: (token: string, mxc: string, maxBytes: number) => Effect.Effect<Uint8Array | undefined, MatrixApiError>
  /** The typing notice of `userId` in a room: on for `timeout`, or off. */
  readonly typing: (token: string, roomId: string, userId: string, typing: boolean, timeout: Duration.Duration) => Effect.Effect<void, MatrixApiError>
}

const room = (id: string) => encodeURIComponent(id)

/** The server name and media id of an `mxc://` URI (the spec's grammar), or undefined. */
export const parseMxc = (uri: string): { readonly server: string; readonly mediaId: string } | undefined => {
  const m = /^mxc:\/\/([A-Za-z0-9.:[\]-]{1,255})\/([A-Za-z0-9_-]{1,255})$/.exec(uri)
  return m === null ? undefined : { server: m[1]!, mediaId: m[2]! }
}

export const make = (homeserver: string): Effect.Effect<MatrixApi, never, HttpClient.HttpClient> =>
  Effect.gen(function* () {
    const client = yield* HttpClient.HttpClient
    const base = homeserver.replace(/\/+$/, "")

    const run = <A, I>(operation: string, request: HttpClientRequest.HttpClientRequest, schema: Schema.Schema<A, I>) =>
      client.execute(request).pipe(
        Effect.mapError((cause) => new MatrixApiError({ operation, cause })),
        Effect.flatMap((res) =>
          res.status >= 200 && res.status < 300
            ? HttpClientResponse.schemaBodyJson(schema)(res).pipe(Effect.mapError((cause) => new MatrixApiError({ operation, status: res.status, cause })))
            : res.json.pipe(
              Effect.flatMap(Schema.decodeUnknown(ErrorBody)),
              Effect.orElseSucceed(() => ({ errcode: undefined, retry_after_ms: undefined })),
              Effect.flatMap((body) =>
                new MatrixApiError({
                  operation,
                  status: res.status,
                  ...(body.errcode !== undefined ? { errcode: body.errcode } : {}),
                  ...(body.retry_after_ms !== undefined ? { retryAfterMs: body.retry_after_ms } : {})
                })
              )
            )
        ),
        Effect.scoped
      )

    const authed = (req: HttpClientRequest.HttpClientRequest, token: string) => HttpClientRequest.bearerToken(req, token)

    return {
      login: (user, password, deviceId) =>
        run("login", HttpClientRequest.post(`${base}/_matrix/client/v3/login`).pipe(
          HttpClientRequest.bodyUnsafeJson({ type: "m.login.password", identifier: { type: "m.id.user", user }, password, device_id: deviceId, initial_device_display_name: "pynchy" })
        ), LoginResponse),
      whoami: (token) =>
        run("whoami", authed(HttpClientRequest.get(`${base}/_matrix/client/v3/account/whoami`), token), WhoAmI).pipe(Effect.map((r) => r.user_id)),
      sync: (token, since, timeout, filter) =>
        run("sync", authed(HttpClientRequest.get(`${base}/_matrix/client/v3/sync`), token).pipe(
          HttpClientRequest.setUrlParams({ filter, timeout: String(Duration.toMillis(timeout)), ...(since !== undefined ? { since } : {}) })
        ), SyncResponse),
      join: (token, roomId) =>
        run("join", authed(HttpClientRequest.post(`${base}/_matrix/client/v3/join/${room(roomId)}`), token).pipe(HttpClientRequest.bodyUnsafeJson({})), Schema.Unknown).pipe(Effect.asVoid),
      joinedMemberCount: (token, roomId) =>
        run("joined_members", authed(HttpClientRequest.get(`${base}/_matrix/client/v3/rooms/${room(roomId)}/joined_members`), token), JoinedMembers).pipe(
          Effect.map((r) => Object.keys(r.joined).length)
        ),
      messagesBack: (token, roomId, from, to) =>
        run("messages", authed(HttpClientRequest.get(`${base}/_matrix/client/v3/rooms/${room(roomId)}/messages`), token).pipe(
          HttpClientRequest.setUrlParams({ dir: "b", from, to, limit: "100" })
        ), MessagesResponse),
      send: (token, roomId, txnId, content) =>
        run("send", authed(HttpClientRequest.put(`${base}/_matrix/client/v3/rooms/${room(roomId)}/send/m.room.message/${encodeURIComponent(txnId)}`), token).pipe(
          HttpClientRequest.bodyUnsafeJson(content)
        ), EventIdResponse).pipe(Effect.map((r) => r.event_id)),
      upload: (token, bytes, contentType, filename) =>
        run("upload", authed(HttpClientRequest.post(`${base}/_matrix/media/v3/upload`), token).pipe(
          HttpClientRequest.setUrlParams({ filename }),
          HttpClientRequest.bodyUint8Array(bytes, contentType)
        ), UploadResponse).pipe(Effect.map((r) => r.content_uri)),
      download: (token, mxc, maxBytes) =>
        Effect.gen(function* () {
          const at = parseMxc(mxc)
          if (at === undefined) return yield* new MatrixApiError({ operation: "download", status: 400, errcode: "M_INVALID_PARAM" })
          const url = `${base}/_matrix/client/v1/media/download/${encodeURIComponent(at.server)}/${encodeURIComponent(at.mediaId)}`
          const res = yield* client.execute(authed(HttpClientRequest.get(url), token)).pipe(Effect.mapError((cause) => new MatrixApiError({ operation: "download", cause })))
          if (res.status < 200 || res.status >= 300) return yield* new MatrixApiError({ operation: "download", status: res.status })
          const chunks: Array<Uint8Array> = []
          let size = 0
          yield* res.stream.pipe(
            Stream.runForEachWhile((chunk) =>
              Effect.sync(() => {
                size += chunk.byteLength
                if (size > maxBytes) return false
                chunks.push(chunk)
                return true
              })
            ),
            Effect.mapError((cause) => new MatrixApiError({ operation: "download", status: res.status, cause }))
          )
          return size > maxBytes ? undefined : new Uint8Array(Buffer.concat(chunks))
        }).pipe(Effect.scoped),
      typing: (token, roomId, userId, typing, timeout) =>
        run("typing", authed(HttpClientRequest.put(`${base}/_matrix/client/v3/rooms/${room(roomId)}/typing/${encodeURIComponent(userId)}`), token).pipe(
          HttpClientRequest.bodyUnsafeJson(typing ? { typing: true, timeout: Duration.toMillis(timeout) } : { typing: false })
        ), Schema.Unknown).pipe(Effect.asVoid)
    }
  })
