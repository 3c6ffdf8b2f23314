/**
 * The routes of the HTTP API on @effect/platform's HttpRouter, every input decoded with Schema:
 * the place (path), the Idempotency-Key (header), `after` / Last-Event-ID, and the JSON body.
 * HttpRuntime.ts serves it; README of the API: docs/channels.md. A spoken reply's audio is served
 * at `/v1/conversations/{place}/replies/{id}/audio`, and a reply's files at `.../replies/{id}/files/{n}`,
 * to the token the reply is for.
 */
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import { Context, Data, type Deferred, Effect, Either, Option, type ParseResult, Schema } from "effect"
import { createHash, randomUUID } from "node:crypto"
import type { FilesConfig } from "../../config/files.js"
import type { DeliveryStore } from "../../db/DeliveryStore.js"
import type { PlaceOwnerStore } from "../../db/PlaceOwnerStore.js"
import { mimeTypeOf, refusalOf, safeName } from "../../files/names.js"
import { ConversationId } from "../../domain/ids.js"
import { MAX_PLACE_CHARS, placeProblem } from "../../domain/place.js"
import { WrittenText } from "../../domain/message.js"
import { problemsOf } from "../../domain/problems.js"
import type { NativeRuntimeContext } from "../../contracts/native-runtime.js"
import { BodyTooLarge, readBody } from "./body.js"
import { bodyDigest, keyedEventId } from "./idempotency.js"
import type { ReplyHub } from "./replies.js"
import { repliesAfter as repliesAfterOf, replyStream } from "./reply-stream.js"
import type { HttpSettings } from "./settings.js"
import type { TokenIdentity } from "./tokens.js"

/** A file posted with a message: its bytes in base64 (the whole body stays within `maxBodyBytes`). */
const PostFile = Schema.Struct({
  name: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(1_000)),
  type: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(255))),
  base64: Schema.Uint8ArrayFromBase64
})

export const PostBody = Schema.Struct({
  text: WrittenText,
  sender: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(255))),
  files: Schema.optional(Schema.Array(PostFile).pipe(Schema.maxItems(100)))
})
const decodeBody = Schema.decodeUnknown(Schema.parseJson(PostBody), { errors: "all", onExcessProperty: "error" })
const IdempotencyKey = Schema.String.pipe(Schema.filter((k) => /^[\x21-\x7e]{1,200}$/.test(k) || "must be 1-200 visible ASCII characters"))
const PostHeaders = Schema.Struct({ "idempotency-key": Schema.optionalWith(IdempotencyKey, { exact: true }) })
const ReplyId = Schema.NumberFromString.pipe(Schema.int(), Schema.nonNegative(), Schema.lessThanOrEqualTo(Number.MAX_SAFE_INTEGER))
const AfterId = Schema.String.pipe(Schema.pattern(/^\d{1,16}$/, { message: () => "must be a reply id (a non-negative integer)" }), Schema.compose(ReplyId))
const AudioParams = Schema.Struct({ id: Schema.String.pipe(Schema.pattern(/^[1-9]\d{0,15}$/, { message: () => "must be a reply id" }), Schema.compose(ReplyId)) })
const FileParams = Schema.Struct({
  ...AudioParams.fields,
  n: Schema.String.pipe(Schema.pattern(/^[1-9]\d{0,2}$/, { message: () => "must be a file number" }), Schema.compose(Schema.NumberFromString))
})
const AfterQuery = Schema.Struct({ after: Schema.optionalWith(AfterId, { exact: true }) })
const ResumeHeaders = Schema.Struct({ "last-event-id": Schema.optionalWith(AfterId, { exact: true }) })

/** What an API call answers when it does not succeed: a status and a JSON body. */
export class HttpFailure extends Data.TaggedError("HttpFailure")<{
  readonly status: number
  readonly body: Record<string, unknown>
  readonly headers?: Record<string, string>
}> {}

const dedupe = (problems: ReadonlyArray<{ readonly path: string; readonly reason: string }>) =>
  problems.filter((p, i) => problems.findIndex((q) => q.path === p.path && q.reason === p.reason) === i)

const CONVERSATIONS = "/v1/conversations/"

/**
 * The place of a `/v1/conversations/{place}/...` request target, decoded and checked by the rules
 * of every way in (src/domain/place.ts); undefined for other paths. Read from the raw target, not
 * the router's parameter: the router would answer 404 for a place it cannot decode or match (an
 * empty one, `%zz`, an encoded lone surrogate), and the API's answer is a 400 naming `place`.
 */
export const placeOfTarget = (target: string): Either.Either<string, HttpFailure> | undefined => {
  if (!target.startsWith(CONVERSATIONS)) return undefined
  const rest = target.slice(CONVERSATIONS.length)
  const end = rest.search(/[/?#]/)
  const segment = end === -1 ? rest : rest.slice(0, end)
  const refuse = (reason: string) => Either.left(new HttpFailure({ status: 400, body: { error: "invalid_request", problems: [{ path: "place", reason }] } }))
  // At most 12 characters of escapes per character: a longer segment is too long before decoding it.
  if (segment.length > MAX_PLACE_CHARS * 12) return refuse(`must be 1-${MAX_PLACE_CHARS} characters`)
  let place: string
  try {
    place = decodeURIComponent(segment)
  } catch {
    return refuse("must be percent-encoded UTF-8 (it holds a bad escape or byte sequence)")
  }
  const problem = placeProblem(place)
  return problem === undefined ? Either.right(place) : refuse(problem)
}

/** The bad input of one part of the request (`body`, `header.Idempotency-Key`, ...), as a 400. */
const invalid = (prefix: string, rename: Record<string, string> = {}) => (error: ParseResult.ParseError) =>
  new HttpFailure({
    status: 400,
    body: {
      error: "invalid_request",
      problems: dedupe(problemsOf(error).map((p) => {
        const path = rename[p.path] ?? p.path
        return { path: path === "" ? prefix : `${prefix}${prefix === "" ? "" : "."}${path}`, reason: p.reason.replace(/,?\s*actual [\s\S]*$/, "") }
      }))
    }
  })

export const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  HttpServerResponse.unsafeJson(body, { status, headers: { "cache-control": "no-store", ...headers } })

/** The caller: its token's client id (stored with its messages; replies and places are scoped to it) and name (their sender). */
export class Caller extends Context.Tag("pynchy/http/Caller")<Caller, TokenIdentity>() {}

export interface ApiOptions {
  readonly name: string
  readonly settings: HttpSettings
  readonly context: NativeRuntimeContext
  readonly deliveries: DeliveryStore.Service
  readonly owners: PlaceOwnerStore.Service
  readonly hub: ReplyHub
  /** The public base URL of the API (`publicUrl`), without a trailing slash; none: audio URLs are paths. */
  readonly baseUrl?: string
  /** Completed when the runtime closes: open streams end. */
  readonly closing: Deferred.Deferred<void>
  /** `files:` of pynchy.yaml: a posted file past them is answered 413 (too large) or 400, naming it. */
  readonly files: FilesConfig
}

/** The most place owners kept in memory; past it the map starts again (the table has them all). */
const KNOWN_OWNERS = 10_000

export const makeRouter = (options: ApiOptions) => {
  const { context, deliveries, hub, name, owners, settings } = options

  // A place belongs to the token that first wrote to it (place_owners); an owner never changes,
  // so once read it is kept here and a request in a known place costs no query.
  const shared = new Set(settings.sharedPlaces)
  const knownOwners = new Map<string, string>()
  const remember = (place: string, owner: string) => {
    if (knownOwners.size >= KNOWN_OWNERS) knownOwners.clear()
    knownOwners.set(place, owner)
    return owner
  }
  const placeOwned = new HttpFailure({
    status: 403,
    body: { error: "place_owned", problems: [{ path: "place", reason: "another token wrote to this place first and owns it; a place every token may use is listed in sharedPlaces" }] }
  })
  /** Refuses a caller that does not own the place (unless it is shared); `claim` makes the caller the owner of a place nobody owns. */
  const checkOwner = (place: string, client: string, claim: boolean) =>
    Effect.gen(function* () {
      if (shared.has(place)) return
      let owner = knownOwners.get(place)
      if (owner === undefined) {
        owner = claim
          ? remember(place, yield* owners.claim({ connection: name, place, owner: client }))
          : Option.getOrUndefined(Option.map(yield* owners.ownerOf({ connection: name, place }), (o) => remember(place, o)))
      }
      if (owner !== undefined && owner !== client) return yield* placeOwned
    })

  /** The place of the path, which an enabled route of this connection must cover. */
  const routedPlace = Effect.gen(function* () {
    const target = placeOfTarget((yield* HttpServerRequest.HttpServerRequest).url)
    // Routes of this router are all under /v1/conversations/{place}: the target has a place.
    if (target === undefined) return yield* new HttpFailure({ status: 404, body: { error: "not_found" } })
    if (Either.isLeft(target)) return yield* target.left
    const place = target.right
    if (!context.routes(name).some((r) => r.place === place || r.place === "*")) {
      return yield* new HttpFailure({ status: 404, body: { error: "no_route", problems: [{ path: "place", reason: `no enabled route of connection '${name}' matches this place` }] } })
    }
    yield* checkOwner(place, (yield* Caller).client, false)
    return { place, conversationId: ConversationId.make(`${name}:${place}`) }
  })

  const method = (allowed: "GET" | "POST") =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (req) =>
      req.method === allowed ? Effect.void : new HttpFailure({ status: 405, body: { error: "method_not_allowed" }, headers: { allow: allowed } }))

  /** Where a reply's audio is served: under the public base URL when one is set, else a path of this server. */
  const audioUrl = (place: string) => (id: number) => `${options.baseUrl ?? ""}/v1/conversations/${encodeURIComponent(place)}/replies/${id}/audio`
  const fileUrl = (place: string) => (id: number, n: number) => `${options.baseUrl ?? ""}/v1/conversations/${encodeURIComponent(place)}/replies/${id}/files/${n}`
  const repliesAfter = (conversationId: ConversationId, place: string, client: string, after: number) =>
    repliesAfterOf(deliveries, conversationId, client, after, settings.keepReplies, audioUrl(place), fileUrl(place))

  /** A posted file past `files:` is refused whole, naming it: the client can fix and resend. */
  const checkFiles = (files: NonNullable<typeof PostBody.Type["files"]>) =>
    Effect.gen(function* () {
      if (files.length > options.files.maxFiles) {
        return yield* new HttpFailure({ status: 400, body: { error: "too_many_files", problems: [{ path: "body.files", reason: `at most ${options.files.maxFiles} files per message` }] } })
      }
      for (const [i, f] of files.entries()) {
        const why = refusalOf(f.base64.byteLength, f.type ?? mimeTypeOf(f.name), options.files)
        if (why === undefined) continue
        const tooLarge = f.base64.byteLength > options.files.maxBytes
        return yield* new HttpFailure({
          status: tooLarge ? 413 : 400,
          body: { error: tooLarge ? "file_too_large" : "file_type_not_allowed", problems: [{ path: `body.files.${i}`, reason: `${safeName(f.name)}: ${why}` }] }
        })
      }
    })

  const messages = Effect.gen(function* () {
    const { place } = yield* routedPlace
    yield* method("POST")
    const caller = yield* Caller
    const headers = yield* HttpServerRequest.schemaHeaders(PostHeaders).pipe(Effect.mapError(invalid("header", { "idempotency-key": "Idempotency-Key" })))
    const req = yield* HttpServerRequest.HttpServerRequest
    const raw = yield* readBody(NodeHttpServerRequest.toIncomingMessage(req), settings.maxBodyBytes).pipe(
      Effect.mapError((e) =>
        e instanceof BodyTooLarge
          ? new HttpFailure({ status: 413, body: { error: "payload_too_large", limit: e.limit }, headers: { connection: "close" } })
          : new HttpFailure({ status: 400, body: { error: "invalid_request", problems: [{ path: "body", reason: "could not be read" }] } })
      )
    )
    const body = yield* decodeBody(raw).pipe(Effect.mapError(invalid("body")))
    const files = body.files ?? []
    yield* checkFiles(files)
    // The fingerprint covers the files too: a retry with other files under the same key is a conflict.
    // The body's `sender` counts in the fingerprint (as it always did) but never names the sender: the token's name does.
    const message = { sender: body.sender ?? "http", text: body.text, ...(files.length > 0 ? { files: files.map((f) => ({ name: f.name, type: f.type ?? "", digest: createHash("sha256").update(f.base64).digest("hex") })) } : {}) }
    const key = headers["idempotency-key"]
    yield* checkOwner(place, caller.client, true)
    const result = yield* context.ingest({
      connection: name,
      place,
      metadata: { client: caller.client },
      sender: caller.name,
      text: message.text,
      ...(files.length > 0 ? { files: files.map((f) => ({ name: f.name, ...(f.type !== undefined ? { mimeType: f.type } : {}), bytes: f.base64 })) } : {}),
      ...(key === undefined
        ? { providerEventId: `anon:${randomUUID()}` }
        : { providerEventId: keyedEventId(caller.tokenHash, place, key), fingerprint: bodyDigest(message) })
    }).pipe(Effect.mapError(() => new HttpFailure({ status: 503, body: { error: "unavailable" } })))
    if (result.conflict) {
      return yield* new HttpFailure({
        status: 409,
        body: {
          error: "idempotency_key_reused",
          problems: [{ path: "header.Idempotency-Key", reason: "this token already used this key in this place for a different message; use a new key for a new message" }]
        }
      })
    }
    return json(202, { messageId: result.messageId, conversationId: result.conversationId, duplicate: result.duplicate })
  })

  const replies = Effect.gen(function* () {
    const { conversationId, place } = yield* routedPlace
    yield* method("GET")
    const { client } = yield* Caller
    const { after } = yield* HttpServerRequest.schemaSearchParams(AfterQuery).pipe(Effect.mapError(invalid("query")))
    return json(200, { conversationId, replies: yield* repliesAfter(conversationId, place, client, after ?? 0) })
  })

  const audio = Effect.gen(function* () {
    const { conversationId } = yield* routedPlace
    yield* method("GET")
    const { client } = yield* Caller
    const { id } = yield* HttpRouter.schemaPathParams(AudioParams).pipe(Effect.mapError(invalid("")))
    const notFound = new HttpFailure({ status: 404, body: { error: "not_found" } })
    // The reply must be this client's, like every reply it reads.
    const [reply] = yield* deliveries.ofClient({ conversationId, client, after: id - 1, limit: 1 })
    if (reply === undefined || reply.id !== id) return yield* notFound
    const stored = yield* deliveries.audioOf(reply.idempotencyKey)
    if (Option.isNone(stored)) return yield* notFound
    return HttpServerResponse.uint8Array(stored.value.bytes, {
      status: 200,
      contentType: stored.value.format === "wav" ? "audio/wav" : "audio/ogg",
      headers: { "cache-control": "private, max-age=86400" }
    })
  })

  const file = Effect.gen(function* () {
    const { conversationId } = yield* routedPlace
    yield* method("GET")
    const { client } = yield* Caller
    const { id, n } = yield* HttpRouter.schemaPathParams(FileParams).pipe(Effect.mapError(invalid("")))
    const notFound = new HttpFailure({ status: 404, body: { error: "not_found" } })
    // The reply must be this client's, like every reply it reads.
    const [reply] = yield* deliveries.ofClient({ conversationId, client, after: id - 1, limit: 1 })
    if (reply === undefined || reply.id !== id) return yield* notFound
    const stored = (yield* deliveries.filesOf(reply.idempotencyKey)).find((f) => f.n === n)
    if (stored === undefined) return yield* notFound
    return HttpServerResponse.uint8Array(stored.bytes, {
      status: 200,
      contentType: stored.mimeType,
      // Always a download, never rendered in the API's origin (the agent chose its bytes).
      headers: { "cache-control": "private, max-age=86400", "content-disposition": `attachment; filename="${stored.name.replace(/[^\x20-\x7e]|"/g, "_")}"`, "x-content-type-options": "nosniff" }
    })
  })

  const stream = Effect.gen(function* () {
    const { conversationId, place } = yield* routedPlace
    yield* method("GET")
    const { client } = yield* Caller
    const query = yield* HttpServerRequest.schemaSearchParams(AfterQuery).pipe(Effect.mapError(invalid("query")))
    const resume = yield* HttpServerRequest.schemaHeaders(ResumeHeaders).pipe(Effect.mapError(invalid("header", { "last-event-id": "Last-Event-ID" })))
    const after = query.after ?? resume["last-event-id"] ?? 0

    return replyStream({ deliveries, hub, conversationId, place, client, after, pageSize: settings.keepReplies, audioUrl: audioUrl(place), fileUrl: fileUrl(place), closing: options.closing })
  })

  const router = HttpRouter.empty.pipe(
    HttpRouter.all("/v1/conversations/:place/messages", messages),
    HttpRouter.all("/v1/conversations/:place/replies", replies),
    HttpRouter.all("/v1/conversations/:place/replies/:id/audio", audio),
    HttpRouter.all("/v1/conversations/:place/replies/:id/files/:n", file),
    HttpRouter.all("/v1/conversations/:place/stream", stream)
  )
  // A bad place is refused before routing (the router has no 400); the router's own limit on a
  // parameter (100 characters by default) is the place's. It reads the limit when it first runs.
  return Effect.gen(function* () {
    const place = placeOfTarget((yield* HttpServerRequest.HttpServerRequest).url)
    if (place !== undefined && Either.isLeft(place)) return yield* place.left
    return yield* HttpRouter.withRouterConfig(router, { maxParamLength: MAX_PLACE_CHARS })
  })
}

/** The configured hash whose token the request carries, or none. */
export type Authenticate = (authorization: string | undefined) => Option.Option<string>
