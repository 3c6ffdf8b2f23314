/**
 * The routes of the HTTP API on @effect/platform's HttpRouter, every input decoded with Schema:
 * the place (path), the Idempotency-Key (header), `after` / Last-Event-ID, and the JSON body.
 * HttpRuntime.ts serves it; README of the API: docs/channels.md.
 */
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import { Chunk, Context, Data, Deferred, Effect, Option, type ParseResult, Queue, Schedule, Schema, Stream } from "effect"
import { randomUUID } from "node:crypto"
import type { DeliveryStore } from "../../db/DeliveryStore.js"
import { ConversationId, TurnId } from "../../domain/ids.js"
import { problemsOf } from "../../domain/problems.js"
import type { NativeRuntimeContext } from "../../runtimes/native-runtime.js"
import { BodyTooLarge, readBody } from "./body.js"
import { bodyDigest, keyedEventId } from "./idempotency.js"
import { DELTA_BACKLOG, type Delta, type Reply, type ReplyHub, replyOf } from "./replies.js"
import type { HttpSettings } from "./settings.js"

/** The longest `text` a message may have, in characters (docs/channels.md). */
export const MAX_TEXT_CHARS = 100_000

export const PostBody = Schema.Struct({
  text: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(MAX_TEXT_CHARS)),
  sender: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(255)))
})
const decodeBody = Schema.decodeUnknown(Schema.parseJson(PostBody), { errors: "all", onExcessProperty: "error" })
const Place = Schema.String.pipe(Schema.filter((p) => (p.trim() !== "" && p.length <= 255) || "must be 1-255 characters"))
const PlaceParams = Schema.Struct({ place: Place })
const IdempotencyKey = Schema.String.pipe(Schema.filter((k) => /^[\x21-\x7e]{1,200}$/.test(k) || "must be 1-200 visible ASCII characters"))
const PostHeaders = Schema.Struct({ "idempotency-key": Schema.optionalWith(IdempotencyKey, { exact: true }) })
const ReplyId = Schema.NumberFromString.pipe(Schema.int(), Schema.nonNegative(), Schema.lessThanOrEqualTo(Number.MAX_SAFE_INTEGER))
const AfterId = Schema.String.pipe(Schema.pattern(/^\d{1,16}$/, { message: () => "must be a reply id (a non-negative integer)" }), Schema.compose(ReplyId))
const AfterQuery = Schema.Struct({ after: Schema.optionalWith(AfterId, { exact: true }) })
const ResumeHeaders = Schema.Struct({ "last-event-id": Schema.optionalWith(AfterId, { exact: true }) })

const HEARTBEAT = "15 seconds"

/** What an API call answers when it does not succeed: a status and a JSON body. */
export class HttpFailure extends Data.TaggedError("HttpFailure")<{
  readonly status: number
  readonly body: Record<string, unknown>
  readonly headers?: Record<string, string>
}> {}

const dedupe = (problems: ReadonlyArray<{ readonly path: string; readonly reason: string }>) =>
  problems.filter((p, i) => problems.findIndex((q) => q.path === p.path && q.reason === p.reason) === i)

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

/** The caller: the client id derived from its token (stored with its messages; replies are scoped to it). */
export class Caller extends Context.Tag("pynchy/http/Caller")<Caller, { readonly tokenHash: string; readonly client: string }>() {}

export interface ApiOptions {
  readonly name: string
  readonly settings: HttpSettings
  readonly context: NativeRuntimeContext
  readonly deliveries: DeliveryStore.Service
  readonly hub: ReplyHub
  /** Completed when the runtime closes: open streams end. */
  readonly closing: Deferred.Deferred<void>
}

export const makeRouter = (options: ApiOptions) => {
  const { context, deliveries, hub, name, settings } = options

  /** The place of the path, which an enabled route of this connection must cover. */
  const routedPlace = Effect.gen(function* () {
    const { place } = yield* HttpRouter.schemaPathParams(PlaceParams).pipe(Effect.mapError(invalid("")))
    if (!context.routes(name).some((r) => r.place === place || r.place === "*")) {
      return yield* new HttpFailure({ status: 404, body: { error: "no_route", problems: [{ path: "place", reason: `no enabled route of connection '${name}' matches this place` }] } })
    }
    return { place, conversationId: ConversationId.make(`${name}:${place}`) }
  })

  const method = (allowed: "GET" | "POST") =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (req) =>
      req.method === allowed ? Effect.void : new HttpFailure({ status: 405, body: { error: "method_not_allowed" }, headers: { allow: allowed } }))

  const repliesAfter = (conversationId: ConversationId, client: string, after: number) =>
    deliveries.ofClient({ conversationId, client, after, limit: settings.keepReplies }).pipe(Effect.map((ds) => ds.map(replyOf)))

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
    const message = { sender: body.sender ?? "http", text: body.text }
    const key = headers["idempotency-key"]
    const result = yield* context.ingest({
      connection: name,
      place,
      metadata: { client: caller.client },
      ...message,
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
    const { conversationId } = yield* routedPlace
    yield* method("GET")
    const { client } = yield* Caller
    const { after } = yield* HttpServerRequest.schemaSearchParams(AfterQuery).pipe(Effect.mapError(invalid("query")))
    return json(200, { conversationId, replies: yield* repliesAfter(conversationId, client, after ?? 0) })
  })

  const stream = Effect.gen(function* () {
    const { conversationId, place } = yield* routedPlace
    yield* method("GET")
    const { client } = yield* Caller
    const query = yield* HttpServerRequest.schemaSearchParams(AfterQuery).pipe(Effect.mapError(invalid("query")))
    const resume = yield* HttpServerRequest.schemaHeaders(ResumeHeaders).pipe(Effect.mapError(invalid("header", { "last-event-id": "Last-Event-ID" })))
    const after = query.after ?? resume["last-event-id"] ?? 0

    const events = Stream.unwrapScoped(Effect.gen(function* () {
      const listener = { wake: yield* Queue.sliding<void>(1), deltas: yield* Queue.dropping<Delta>(DELTA_BACKLOG) }
      // Listening starts before the first read, so a reply recorded in between is not missed.
      yield* Effect.acquireRelease(Effect.sync(() => hub.listen(place, listener)), (unlisten) => Effect.sync(unlisten))
      let last = after
      const seen = new Set<string>()
      const ofClient = new Map<number, boolean>()
      const reply = (r: Reply) => `id: ${r.id}\nevent: reply\ndata: ${JSON.stringify(r)}\n\n`
      const newReplies: Effect.Effect<Array<string>> = Effect.gen(function* () {
        const out: Array<string> = []
        while (true) {
          const page = yield* repliesAfter(conversationId, client, last)
          for (const r of page) {
            last = r.id
            seen.add(r.key)
            out.push(reply(r))
          }
          if (page.length < settings.keepReplies) return out
        }
      })
      const delta = (d: Delta) =>
        Effect.gen(function* () {
          // A delta that lost the race with its own reply is stale: the reply said it all.
          if (seen.has(d.key)) return []
          let mine = ofClient.get(d.turnId)
          if (mine === undefined) {
            mine = yield* deliveries.turnOfClient(TurnId.make(d.turnId), client)
            ofClient.set(d.turnId, mine)
          }
          return mine ? [`event: delta\ndata: ${JSON.stringify(d)}\n\n`] : []
        })
      const backlog = yield* newReplies
      const live = Stream.merge(
        Stream.fromQueue(listener.wake).pipe(Stream.mapEffect(() => newReplies)),
        Stream.fromQueue(listener.deltas).pipe(Stream.mapEffect(delta))
      ).pipe(Stream.flattenIterables)
      const pings = Stream.fromSchedule(Schedule.spaced(HEARTBEAT)).pipe(Stream.as(": ping\n\n"))
      return Stream.fromIterable(["retry: 1000\n\n", ...backlog]).pipe(
        Stream.concat(Stream.merge(live, pings)),
        Stream.interruptWhen(Deferred.await(options.closing))
      )
    }))
    const encoder = new TextEncoder()
    return HttpServerResponse.stream(Stream.mapChunks(events, Chunk.map((s) => encoder.encode(s))), {
      contentType: "text/event-stream",
      headers: { "cache-control": "no-store", "x-accel-buffering": "no" }
    })
  })

  return HttpRouter.empty.pipe(
    HttpRouter.all("/v1/conversations/:place/messages", messages),
    HttpRouter.all("/v1/conversations/:place/replies", replies),
    HttpRouter.all("/v1/conversations/:place/stream", stream)
  )
}

/** The configured hash whose token the request carries, or none. */
export type Authenticate = (authorization: string | undefined) => Option.Option<string>
