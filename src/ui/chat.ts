/**
 * The UI's chat: a connection of its own (`ui`, place = the chat's name) on the durable path.
 * A posted message is ingested like any channel's (receipt, fingerprint, message in one
 * transaction; the client's idempotency key makes a retried POST a duplicate), and replies are
 * served from the deliveries table by the HTTP channel's reply stream (deltas while the agent
 * writes, the reply once recorded). Each login token is its own client: it reads the replies to
 * its own messages.
 */
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { type Deferred, Effect, Option, Schema } from "effect"
import { clientOf } from "../channels/http/tokens.js"
import { bodyDigest, keyedEventId } from "../channels/http/idempotency.js"
import type { ReplyHub } from "../channels/http/replies.js"
import { repliesAfter, replyStream } from "../channels/http/reply-stream.js"
import { UI_CONNECTION } from "../config/ui.js"
import type { DeliveryStore } from "../db/DeliveryStore.js"
import type { MessageStore } from "../db/MessageStore.js"
import { ConversationId } from "../domain/ids.js"
import type { Ingest } from "../pipeline/Ingest.js"
import type { Workspaces } from "../pipeline/Workspaces.js"
import { htmlResponse } from "./html.js"
import { CurrentSession, decodeForm, UiFailure } from "./context.js"
import { chatBody, type ChatLine } from "./pages/chat.js"
import { page } from "./pages/layout.js"
import { placeProblem } from "../domain/place.js"

export const Place = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z0-9._-]{1,64}$/, { message: () => "must be 1-64 letters, digits, '.', '_' or '-'" }),
  // And a place by the rules of every way in (not '.' or '..').
  Schema.filter((p) => placeProblem(p) ?? true)
)
const PlaceParams = Schema.Struct({ place: Place })
const MessageForm = Schema.Struct({
  text: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(100_000)),
  /** The browser's idempotency key; empty when the form was posted without the script. */
  key: Schema.optionalWith(Schema.String.pipe(Schema.maxLength(200)), { default: () => "" })
})
const AfterQuery = Schema.Struct({ after: Schema.optionalWith(Schema.NumberFromString.pipe(Schema.int(), Schema.nonNegative()), { default: () => 0 }) })
const OpenQuery = Schema.Struct({ place: Schema.optional(Place) })

const SHOWN = 200
const PAGE = 1_000

export interface ChatOptions {
  readonly ingest: Ingest.Service
  readonly deliveries: DeliveryStore.Service
  readonly messages: MessageStore.Service
  readonly workspaces: Workspaces.Service
  readonly hub: ReplyHub
  readonly closing: Deferred.Deferred<void>
}

const invalid = (what: string) => () => new UiFailure({ status: 400, reason: `invalid ${what}` })

export const chatRoutes = (o: ChatOptions) => {
  const routed = (place: string) => o.workspaces.routesOf(UI_CONNECTION).some((r) => r.place === place || r.place === "*")
  const conversationOf = (place: string) => ConversationId.make(`${UI_CONNECTION}:${place}`)
  const placeParam = HttpRouter.schemaPathParams(PlaceParams).pipe(Effect.mapError(invalid("chat name")), Effect.map((p) => p.place))

  const open = Effect.gen(function* () {
    const { place } = yield* HttpServerRequest.schemaSearchParams(OpenQuery).pipe(Effect.mapError(invalid("chat name")))
    return HttpServerResponse.redirect(`/chat/${place ?? "main"}`, { status: 303 })
  })

  const view = Effect.gen(function* () {
    const place = yield* placeParam
    const session = yield* CurrentSession
    const client = clientOf(session.tokenHash)
    const conversationId = conversationOf(place)
    const replies = (yield* repliesAfter(o.deliveries, conversationId, client, 0, PAGE)).slice(-SHOWN)
    const mine = (yield* o.messages.recent(conversationId, SHOWN)).filter((m) => m.direction === "in" && m.metadata["client"] === client)
    const lines: Array<ChatLine> = [
      ...mine.map((m): ChatLine => ({ at: m.createdAt, who: "you", text: m.text, messageId: m.id })),
      ...replies.map((r): ChatLine => ({ at: r.at, who: r.kind === "notice" ? "notice" : "assistant", text: r.text, key: r.key }))
    ].sort((a, b) => a.at - b.at)
    const places = (yield* o.messages.conversations).filter((c) => c.connection === UI_CONNECTION).map((c) => c.place)
    return htmlResponse(page(
      { title: "Chat", user: { name: session.user, csrf: session.csrf }, current: "/chat" },
      chatBody({ place, csrf: session.csrf, lines, after: replies.at(-1)?.id ?? 0, routed: routed(place), places: [...new Set([...places, place])].sort() })
    ))
  })

  const post = Effect.gen(function* () {
    const place = yield* placeParam
    const session = yield* CurrentSession
    const req = yield* HttpServerRequest.HttpServerRequest
    const form = yield* decodeForm(MessageForm).pipe(Effect.mapError(invalid("message")))
    if (!routed(place)) return yield* new UiFailure({ status: 404, reason: `no enabled route of connection '${UI_CONNECTION}' covers place '${place}'` })
    const client = clientOf(session.tokenHash)
    const message = { sender: session.user, text: form.text }
    const key = form.key.trim()
    const result = yield* o.ingest.ingest({
      connection: UI_CONNECTION,
      place,
      metadata: { client },
      ...message,
      ...(key === ""
        ? { providerEventId: `anon:${crypto.randomUUID()}` }
        : { providerEventId: keyedEventId(session.tokenHash, place, key), fingerprint: bodyDigest(message) })
    }).pipe(Effect.mapError((e) => new UiFailure({ status: e._tag === "NoRoute" ? 404 : 400, reason: e.message })))
    if (result.conflict) return yield* new UiFailure({ status: 409, reason: "this key was already used for another message" })
    return (req.headers["accept"] ?? "").includes("application/json")
      ? HttpServerResponse.unsafeJson({ messageId: result.messageId, conversationId: result.conversationId, duplicate: result.duplicate }, { status: 202 })
      : HttpServerResponse.redirect(`/chat/${place}`, { status: 303 })
  })

  const stream = Effect.gen(function* () {
    const place = yield* placeParam
    const session = yield* CurrentSession
    const query = yield* HttpServerRequest.schemaSearchParams(AfterQuery).pipe(Effect.mapError(invalid("query")))
    const resume = Option.fromNullable((yield* HttpServerRequest.HttpServerRequest).headers["last-event-id"]).pipe(
      Option.map(Number),
      Option.filter((n) => Number.isSafeInteger(n) && n >= 0)
    )
    return replyStream({
      deliveries: o.deliveries,
      hub: o.hub,
      conversationId: conversationOf(place),
      place,
      client: clientOf(session.tokenHash),
      after: Option.getOrElse(resume, () => query.after),
      pageSize: PAGE,
      closing: o.closing
    })
  })

  return HttpRouter.empty.pipe(
    HttpRouter.get("/chat", open),
    HttpRouter.get("/chat/:place", view),
    HttpRouter.post("/chat/:place/messages", post),
    HttpRouter.get("/chat/:place/stream", stream)
  )
}
