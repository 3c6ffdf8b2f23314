/**
 * The story of one inbound message, read from the database (`pynchy trace`): its receipt, route,
 * the turn that claimed it with that turn's events (attempts, sandbox, gateway calls, approvals),
 * its deliveries, and a verdict (src/events/trace-verdict.ts). It only reads, so it works on a
 * stopped host and beside a running one (WAL readers do not block the writer).
 */
import { SqlClient } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { type EventOf, HostEvent } from "./HostEvent.js"
import { type Verdict, verdictOf } from "./trace-verdict.js"
import { jsonField } from "../db/dialect.js"

/** Nothing in the database answers to the query. */
export class TraceTargetUnknown extends Schema.TaggedError<TraceTargetUnknown>()("TraceTargetUnknown", { query: Schema.String }) {
  override get message() {
    return this.query === ""
      ? "no inbound message yet: nothing to trace"
      : `nothing known as '${this.query}': not a message id, a conversation (connection:place) or a platform event id in this database`
  }
}

export interface TracedMessage {
  readonly id: number
  readonly conversationId: string
  readonly connection: string
  readonly place: string
  readonly workspace: string
  readonly providerEventId: string | null
  readonly receivedAt: number
  readonly handledBy: number | null
}

export interface TracedTurn {
  readonly id: number
  readonly status: "queued" | "running" | "completed" | "blocked" | "failed" | "interrupted"
  readonly attempts: number
  readonly error: string | null
  readonly notBefore: number
  readonly createdAt: number
  readonly updatedAt: number
}

export interface TracedDelivery {
  readonly id: number
  readonly idempotencyKey: string
  readonly kind: "reply" | "notice"
  readonly status: "pending" | "sent" | "failed" | "unknown"
  readonly attempts: number
  readonly error: string | null
  readonly updatedAt: number
}

export interface TracedApproval {
  readonly code: string
  readonly action: string
  readonly status: string
  readonly expiresAt: number
}

/** What the database knows about one message; the verdict is computed from it. */
export interface TraceFacts {
  /** The message, or null when it was refused before it was stored (no route). */
  readonly message: TracedMessage | null
  readonly noRoute: EventOf<"message.no_route"> | null
  /** The turn that claimed or handled it. */
  readonly turn: TracedTurn | null
  /** The conversation's active turn when the message is still waiting for one. */
  readonly ahead: TracedTurn | null
  readonly deliveries: ReadonlyArray<TracedDelivery>
  readonly approvals: ReadonlyArray<TracedApproval>
  /** The events of the message and its turn, oldest first. */
  readonly events: ReadonlyArray<HostEvent>
  /** The last readiness its connection's runtime reported (null: none recorded). */
  readonly channelReady: { readonly ready: boolean; readonly since: number } | null
  /** The host that last ran on this database: whether it is still up. */
  readonly hostRunning: boolean
}

export interface Trace extends TraceFacts {
  readonly verdict: Verdict
}

const decodeEvent = Schema.decodeUnknownOption(HostEvent)
const eventOf = (row: { type: string; payload: string; at: number }): Option.Option<HostEvent> =>
  decodeEvent({ ...(JSON.parse(row.payload) as object), type: row.type, at: row.at })

const turnColumns = `id, status, attempts, error, not_before AS "notBefore", created_at AS "createdAt", updated_at AS "updatedAt"`

/**
 * Traces `query`: a message id, a conversation (its latest inbound message, or its latest refusal
 * if that came later) or a platform event id; none, with `last`: the latest inbound message.
 * `hostRunning` is the caller's (it reads the status file).
 */
export const trace = (query: string | undefined, hostRunning: boolean) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const messageCols = sql.literal(`m.id, m.conversation_id AS "conversationId", c.connection, c.place, c.workspace, m.created_at AS "receivedAt", m.handled_by AS "handledBy",
      (SELECT r.provider_event_id FROM receipts r WHERE r.message_id = m.id) AS "providerEventId"`)
    const refusal = (field: "conversationId" | "providerEventId", value: string | null) =>
      sql<{ type: string; payload: string; at: number }>`SELECT type, payload, at FROM events WHERE type = 'message.no_route'
        ${value === null ? sql`` : sql`AND ${jsonField(sql, "payload", field)} = ${value}`} ORDER BY id DESC LIMIT 1`.pipe(
        Effect.map((rows) => Option.getOrNull(Option.flatMap(Option.fromNullable(rows[0]), eventOf)) as EventOf<"message.no_route"> | null)
      )
    const later = (m: TracedMessage | undefined, r: EventOf<"message.no_route"> | null) =>
      r !== null && (m === undefined || r.at > m.receivedAt) ? { message: null, noRoute: r } : m !== undefined ? { message: m, noRoute: null } : null

    const q = query?.trim() ?? ""
    const found = yield* Effect.gen(function* () {
      if (q === "") {
        const latest = (yield* sql<TracedMessage>`SELECT ${messageCols} FROM messages m JOIN conversations c ON c.id = m.conversation_id WHERE m.direction = 'in' ORDER BY m.id DESC LIMIT 1`)[0]
        return later(latest, yield* refusal("conversationId", null))
      }
      if (/^\d+$/.test(q)) {
        const byId = (yield* sql<TracedMessage>`SELECT ${messageCols} FROM messages m JOIN conversations c ON c.id = m.conversation_id WHERE m.direction = 'in' AND m.id = ${Number(q)}`)[0]
        if (byId !== undefined) return { message: byId, noRoute: null }
      }
      const inConversation = (yield* sql<TracedMessage>`SELECT ${messageCols} FROM messages m JOIN conversations c ON c.id = m.conversation_id
        WHERE m.direction = 'in' AND m.conversation_id = ${q} ORDER BY m.id DESC LIMIT 1`)[0]
      const conversation = later(inConversation, yield* refusal("conversationId", q))
      if (conversation !== null) return conversation
      const byEvent = (yield* sql<TracedMessage>`SELECT ${messageCols} FROM messages m JOIN conversations c ON c.id = m.conversation_id
        WHERE m.direction = 'in' AND m.id = (SELECT message_id FROM receipts WHERE provider_event_id = ${q} ORDER BY message_id DESC LIMIT 1)`)[0]
      return later(byEvent, yield* refusal("providerEventId", q))
    }).pipe(Effect.orDie)
    if (found === null) return yield* new TraceTargetUnknown({ query: q })

    const facts = yield* (found.message === null
      ? Effect.succeed<TraceFacts>({ message: null, noRoute: found.noRoute, turn: null, ahead: null, deliveries: [], approvals: [], events: [found.noRoute!], channelReady: null, hostRunning })
      : storyOf(found.message, hostRunning)).pipe(Effect.orDie)
    return { ...facts, verdict: verdictOf(facts) } satisfies Trace
  })

const storyOf = (m: TracedMessage, hostRunning: boolean) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const claimed = (yield* sql<{ turnId: number }>`SELECT turn_id AS "turnId" FROM delivery_claims WHERE message_id = ${m.id}`)[0]?.turnId ?? m.handledBy
    const turn = claimed === null ? null : (yield* sql<TracedTurn>`SELECT ${sql.literal(turnColumns)} FROM turns WHERE id = ${claimed}`)[0] ?? null
    const ahead = turn !== null ? null : (yield* sql<TracedTurn>`SELECT ${sql.literal(turnColumns)} FROM turns
      WHERE conversation_id = ${m.conversationId} AND status IN ('queued', 'running', 'interrupted') ORDER BY id LIMIT 1`)[0] ?? null
    const deliveries = turn === null ? [] : yield* sql<TracedDelivery>`SELECT id, idempotency_key AS "idempotencyKey", kind, status, attempts, error, updated_at AS "updatedAt"
      FROM deliveries WHERE turn_id = ${turn.id} ORDER BY id`
    const approvals = turn === null ? [] : yield* sql<TracedApproval>`SELECT id AS code, action, status, expires_at AS "expiresAt" FROM approvals WHERE turn_id = ${turn.id} ORDER BY created_at`
    const rows = yield* sql<{ type: string; payload: string; at: number }>`SELECT type, payload, at FROM events
      WHERE ${jsonField(sql, "payload", "conversationId")} = ${m.conversationId} AND at >= ${m.receivedAt - 1_000} ORDER BY id LIMIT 5000`
    const codes = new Set(approvals.map((a) => a.code))
    const started = turn?.createdAt ?? Number.POSITIVE_INFINITY
    const events = rows.flatMap((r) => Option.toArray(eventOf(r))).filter((e) =>
      ("turnId" in e && turn !== null && e.turnId === turn.id) ||
      ((e.type === "message.ingested" || e.type === "message.deduplicated") && e.messageId === m.id) ||
      (e.type === "turn.queued" && e.at <= started) ||
      (e.type === "approval.decided" && codes.has(e.code))
    )
    const readiness = yield* sql<{ type: string; at: number }>`SELECT type, at FROM events WHERE type IN ('runtime.ready', 'runtime.unready')
      AND ${jsonField(sql, "payload", "runtime")} = ${m.connection} ORDER BY id DESC LIMIT 1`
    const channelReady = readiness[0] === undefined ? null : { ready: readiness[0].type === "runtime.ready", since: readiness[0].at }
    return { message: m, noRoute: null, turn, ahead, deliveries, approvals, events, channelReady, hostRunning } satisfies TraceFacts
  })
