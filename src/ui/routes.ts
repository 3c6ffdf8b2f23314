/**
 * The UI's pages besides the chat, each read from the host's services and stores: conversations
 * (turns, messages, the trace of each message), approvals (decided here with `decidedBy` naming
 * the UI user), runtimes and their readiness, the gateway (deployments, spend per day), schedules
 * and tasks, and `/live`, the SSE feed of changes.
 */
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { SqlClient } from "@effect/sql"
import { Clock, type Deferred, Effect, Option, Schedule, Schema, Stream } from "effect"
import { ApprovalStore } from "../actions/ApprovalStore.js"
import { Approvals } from "../actions/Approvals.js"
import { sseResponse } from "../channels/http/reply-stream.js"
import { HostStore } from "../db/HostStore.js"
import { MessageStore } from "../db/MessageStore.js"
import { TaskStore } from "../db/TaskStore.js"
import { TurnStore } from "../db/TurnStore.js"
import { ConversationId } from "../domain/ids.js"
import { Gateway } from "../gateway/Gateway.js"
import { Channels } from "../pipeline/Channels.js"
import { ConnectionRuntimes } from "../runtimes/ConnectionRuntimes.js"
import { CurrentSession, decodeForm, UiFailure } from "./context.js"
import { type Html, htmlResponse } from "./html.js"
import type { LiveChange } from "./live.js"
import { approvalsBody } from "./pages/approvals.js"
import { conversationBody, conversationsBody, traceBody } from "./pages/conversations.js"
import { gatewayBody } from "./pages/gateway.js"
import { page } from "./pages/layout.js"
import { runtimesBody } from "./pages/runtimes.js"
import { schedulesBody } from "./pages/schedules.js"
import { traceOfMessage } from "./trace.js"

const DAY = 86_400_000
const HEARTBEAT = "15 seconds"
const CodeParams = Schema.Struct({ code: Schema.String.pipe(Schema.pattern(/^[a-z0-9]{6}$/)) })
const DecisionForm = Schema.Struct({ decision: Schema.Literal("approve", "deny") })
const ConversationParams = Schema.Struct({ id: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(600)) })
const MessageParams = Schema.Struct({ id: Schema.NumberFromString.pipe(Schema.int(), Schema.positive()) })
const NoticeQuery = Schema.Struct({ decided: Schema.optional(Schema.String.pipe(Schema.pattern(/^[a-z0-9]{6} (approved|denied)$/))) })

const notFound = (what: string) => new UiFailure({ status: 404, reason: `${what} not found` })
const invalid = (what: string) => () => new UiFailure({ status: 400, reason: `invalid ${what}` })

export const pageRoutes = (live: Stream.Stream<LiveChange>, closing: Deferred.Deferred<void>) =>
  Effect.gen(function* () {
    const approvals = yield* Approvals
    const approvalStore = yield* ApprovalStore
    const messages = yield* MessageStore
    const turns = yield* TurnStore
    const tasks = yield* TaskStore
    const host = yield* HostStore
    const gateway = yield* Gateway
    const runtimes = yield* ConnectionRuntimes
    const channels = yield* Channels
    const traceContext = yield* Effect.context<MessageStore | SqlClient.SqlClient>()

    const show = (title: string, current: string, body: Html) =>
      Effect.map(CurrentSession, (session) =>
        htmlResponse(page({ title, current, live: true, user: { name: session.user, csrf: session.csrf } }, body)))

    const conversations = Effect.flatMap(messages.conversations, (rows) =>
      show("Conversations", "/conversations", conversationsBody([...rows].sort((a, b) => b.createdAt - a.createdAt))))

    const conversation = Effect.gen(function* () {
      const { id } = yield* HttpRouter.schemaPathParams(ConversationParams).pipe(Effect.mapError(invalid("conversation")))
      const found = yield* messages.conversation(ConversationId.make(id))
      if (Option.isNone(found)) return yield* notFound("conversation")
      const recent = yield* messages.recent(found.value.id, 100)
      const recentTurns = yield* turns.recent(found.value.id, 50)
      return yield* show(found.value.id, "/conversations", conversationBody(found.value, recent, recentTurns))
    })

    const trace = Effect.gen(function* () {
      const { id } = yield* HttpRouter.schemaPathParams(MessageParams).pipe(Effect.mapError(invalid("message id")))
      const found = yield* traceOfMessage(id).pipe(Effect.provide(traceContext))
      if (Option.isNone(found)) return yield* notFound("message")
      return yield* show(`Trace of message ${id}`, "/conversations", traceBody(found.value))
    })

    const approvalList = Effect.gen(function* () {
      const { decided } = yield* HttpServerRequest.schemaSearchParams(NoticeQuery).pipe(Effect.mapError(invalid("query")))
      const session = yield* CurrentSession
      const rows = yield* approvalStore.recent(100)
      return yield* show("Approvals", "/approvals", approvalsBody(rows, session.csrf, yield* Clock.currentTimeMillis, decided))
    })

    const decide = Effect.gen(function* () {
      const { code } = yield* HttpRouter.schemaPathParams(CodeParams).pipe(Effect.mapError(invalid("approval code")))
      const { decision } = yield* decodeForm(DecisionForm).pipe(Effect.mapError(invalid("decision")))
      const session = yield* CurrentSession
      const decided = yield* approvals.decideCode(code, decision === "approve" ? "approved" : "denied", session.user)
      if (Option.isNone(decided)) return yield* new UiFailure({ status: 409, reason: `approval ${code} is not pending (decided, expired or unknown)` })
      return HttpServerResponse.redirect(`/approvals?decided=${encodeURIComponent(`${code} ${decided.value.status}`)}`, { status: 303 })
    })

    const runtimePage = Effect.flatMap(runtimes.health, (health) => show("Runtimes", "/runtimes", runtimesBody(health, [...channels.names()].sort())))

    const gatewayPage = Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      const today = now - (now % DAY)
      const rows = yield* host.usagePerDay(today - 13 * DAY)
      return yield* show("Gateway", "/gateway", gatewayBody(yield* gateway.status, rows, today))
    })

    const schedules = Effect.gen(function* () {
      const all = yield* tasks.list()
      const withRuns = yield* Effect.forEach(all, (task) => Effect.map(tasks.lastRun(task.id), (last) => ({ task, last: Option.getOrUndefined(last) })))
      return yield* show("Schedules", "/schedules", schedulesBody(withRuns))
    })

    const liveStream = Effect.gen(function* () {
      const frames = Stream.merge(
        live.pipe(Stream.map((c) => `event: change\ndata: ${JSON.stringify(c)}\n\n`)),
        Stream.fromSchedule(Schedule.spaced(HEARTBEAT)).pipe(Stream.as(": ping\n\n"))
      )
      return sseResponse(Stream.concat(Stream.make("retry: 2000\n\n"), frames).pipe(Stream.interruptWhen(closing)))
    })

    return HttpRouter.empty.pipe(
      HttpRouter.get("/", Effect.succeed(HttpServerResponse.redirect("/chat", { status: 303 }))),
      HttpRouter.get("/conversations", conversations),
      HttpRouter.get("/conversations/:id", conversation),
      HttpRouter.get("/messages/:id", trace),
      HttpRouter.get("/approvals", approvalList),
      HttpRouter.post("/approvals/:code", decide),
      HttpRouter.get("/runtimes", runtimePage),
      HttpRouter.get("/gateway", gatewayPage),
      HttpRouter.get("/schedules", schedules),
      HttpRouter.get("/live", liveStream)
    )
  })
