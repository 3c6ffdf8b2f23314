import { SqlClient, SqlSchema } from "@effect/sql"
import { Clock, Context, Effect, Layer, Option, Schema } from "effect"
import { ConversationId, MessageId, TurnId, WorkspaceId } from "../domain/ids.js"

/** Where a history entry sits in a conversation: by the turn that handled it, user messages before that turn's replies. */
export interface Position {
  readonly turn: number
  /** 0: a user message; 1: a delivered reply. */
  readonly kind: 0 | 1
  readonly id: number
}

export const comparePositions = (a: Position, b: Position): number => a.turn - b.turn || a.kind - b.kind || a.id - b.id

/** One entry of the history timeline, as the database holds it. */
export interface TimelineEntry extends Position {
  readonly role: "user" | "assistant"
  readonly sender: string
  readonly text: string
}

/**
 * A history page as SQLite returns it in raw mode: `[kind, id, turn, sender, text]`, user
 * messages (kind 0, newest first) then replies (kind 1, newest first). A page holds hundreds of
 * rows on every turn, so it is decoded in one pass by a plain guard rather than per row.
 */
type PageRow = readonly [kind: 0 | 1, id: number, turn: number | null, sender: string, text: string]
const isPage = (u: unknown): u is ReadonlyArray<PageRow> => {
  if (!Array.isArray(u)) return false
  for (const r of u as Array<unknown>) {
    if (!Array.isArray(r) || r.length !== 5) return false
    const [kind, id, turn, sender, text] = r as Array<unknown>
    if ((kind !== 0 && kind !== 1) || typeof id !== "number" || (turn !== null && typeof turn !== "number") || typeof sender !== "string" || typeof text !== "string") return false
  }
  return true
}
const TimelinePage = Schema.declare(isPage, { identifier: "TimelinePage" })
const decodePage = Schema.decodeUnknown(TimelinePage)

/** Bounds of one history read: user messages with `after < id < userBefore`, replies of turns in [fromTurn, beforeTurn) with id < `replyBefore`. */
export interface PageRequest {
  readonly after: number
  readonly userBefore: number
  readonly userLimit: number
  readonly fromTurn: number
  readonly beforeTurn: number
  readonly replyBefore: number
  readonly replyLimit: number
}

/** One read of both sides, each newest first. */
export interface Page {
  readonly users: ReadonlyArray<TimelineEntry>
  readonly replies: ReadonlyArray<TimelineEntry>
}

export const ContextStart = Schema.Struct({ messageId: Schema.Int, turnId: Schema.Int })
export type ContextStart = typeof ContextStart.Type

export const SummaryRow = Schema.Struct({
  id: Schema.Int,
  contextStart: Schema.Int,
  firstMessageId: Schema.NullOr(Schema.Int),
  lastMessageId: Schema.NullOr(Schema.Int),
  throughTurn: Schema.Int,
  throughKind: Schema.Literal(0, 1),
  throughId: Schema.Int,
  text: Schema.String,
  tokens: Schema.Int,
  model: Schema.String,
  createdAt: Schema.Number
})
export type SummaryRow = typeof SummaryRow.Type

export const ConversationListing = Schema.Struct({
  id: ConversationId,
  workspace: WorkspaceId,
  messages: Schema.Int,
  contextStart: Schema.NullOr(Schema.Int),
  summaries: Schema.Int,
  createdAt: Schema.Number
})
export type ConversationListing = typeof ConversationListing.Type

export declare namespace ContextStore {
  /**
   * The reads and writes of conversation memory. Every history read is one statement of two
   * keyset pages over indexes, newest first: the caller pages until its budget is spent, never
   * the whole history.
   */
  export interface Service {
    /**
     * Up to `userLimit` user messages and `replyLimit` sent replies (not notices, not pending,
     * failed or unknown) within the request's bounds, each side newest first, in one statement.
     */
    readonly page: (conversationId: ConversationId, request: PageRequest) => Effect.Effect<Page>
    readonly start: (conversationId: ConversationId) => Effect.Effect<ContextStart>
    /** Moves the context start forward to the `/new` message (never back); true when it moved. */
    readonly moveStart: (conversationId: ConversationId, messageId: MessageId, turnId: TurnId) => Effect.Effect<boolean>
    /** The newest summary made under this context start. */
    readonly latestSummary: (conversationId: ConversationId, contextStart: number) => Effect.Effect<Option.Option<SummaryRow>>
    readonly addSummary: (conversationId: ConversationId, row: Omit<SummaryRow, "id" | "createdAt">) => Effect.Effect<void>
    /** Every conversation with its message count and context start (for `pynchy conversations`). */
    readonly list: Effect.Effect<ReadonlyArray<ConversationListing>>
  }
}

export class ContextStore extends Context.Tag("pynchy/ContextStore")<ContextStore, ContextStore.Service>() {
  static readonly make = Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    // Two bounded arms, each walking its index backwards: messages_conversation (conversation_id, id)
    // and deliveries_sent_replies (conversation_id, id) WHERE kind = 'reply' AND status = 'sent'.
    // A side not asked for has LIMIT 0 and costs nothing.
    const readPage = (conversationId: ConversationId, r: PageRequest) =>
      sql`SELECT * FROM (SELECT 0 AS kind, id, handled_by AS turn, sender, text FROM messages
          WHERE conversation_id = ${conversationId} AND id > ${r.after} AND id < ${r.userBefore} AND direction = 'in'
          ORDER BY id DESC LIMIT ${r.userLimit}) AS users
        UNION ALL
        SELECT * FROM (SELECT 1 AS kind, id, turn_id AS turn, '' AS sender, text FROM deliveries
          WHERE conversation_id = ${conversationId} AND kind = 'reply' AND status = 'sent' AND id < ${r.replyBefore}
            AND turn_id >= ${r.fromTurn} AND turn_id < ${r.beforeTurn}
          ORDER BY id DESC LIMIT ${r.replyLimit}) AS replies
        ORDER BY kind, id DESC`.values.pipe(Effect.flatMap(decodePage))
    const findStart = SqlSchema.findOne({
      Request: ConversationId,
      Result: ContextStart,
      execute: (id) => sql`SELECT message_id AS "messageId", turn_id AS "turnId" FROM conversation_starts WHERE conversation_id = ${id}`
    })
    const findSummary = SqlSchema.findOne({
      Request: Schema.Struct({ conversationId: ConversationId, contextStart: Schema.Number }),
      Result: SummaryRow,
      execute: ({ conversationId, contextStart }) => sql`SELECT id, context_start AS "contextStart", first_message_id AS "firstMessageId",
          last_message_id AS "lastMessageId", through_turn AS "throughTurn", through_kind AS "throughKind", through_id AS "throughId",
          text, tokens, model, created_at AS "createdAt"
        FROM conversation_summaries WHERE conversation_id = ${conversationId} AND context_start = ${contextStart} ORDER BY id DESC LIMIT 1`
    })
    const listing = SqlSchema.findAll({
      Request: Schema.Void,
      Result: ConversationListing,
      execute: () => sql`SELECT c.id, c.workspace, c.created_at AS "createdAt",
          (SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.id) AS messages,
          (SELECT s.message_id FROM conversation_starts s WHERE s.conversation_id = c.id) AS "contextStart",
          (SELECT COUNT(*) FROM conversation_summaries x WHERE x.conversation_id = c.id) AS summaries
        FROM conversations c ORDER BY c.created_at, c.id`
    })

    return ContextStore.of({
      page: (conversationId, request) =>
        readPage(conversationId, request).pipe(
          Effect.map((rows): Page => {
            const users: Array<TimelineEntry> = []
            const replies: Array<TimelineEntry> = []
            for (const [kind, id, turn, sender, text] of rows) {
              // A message not yet marked handled sorts with the turn being built (it cannot be older).
              if (kind === 0) users.push({ turn: turn ?? Number.MAX_SAFE_INTEGER, kind, id, role: "user", sender, text })
              else replies.push({ turn: turn!, kind, id, role: "assistant", sender, text })
            }
            return { users, replies }
          }),
          Effect.orDie
        ),
      start: (conversationId) => findStart(conversationId).pipe(Effect.map(Option.getOrElse(() => ({ messageId: 0, turnId: 0 }))), Effect.orDie),
      moveStart: (conversationId, messageId, turnId) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          sql`INSERT INTO conversation_starts (conversation_id, message_id, turn_id, updated_at) VALUES (${conversationId}, ${messageId}, ${turnId}, ${now})
            ON CONFLICT (conversation_id) DO UPDATE SET message_id = excluded.message_id, turn_id = excluded.turn_id, updated_at = excluded.updated_at
            WHERE excluded.message_id > conversation_starts.message_id
            RETURNING 1 AS moved`
        ).pipe(Effect.map((r) => r.length > 0), Effect.orDie),
      latestSummary: (conversationId, contextStart) => findSummary({ conversationId, contextStart }).pipe(Effect.orDie),
      addSummary: (conversationId, r) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          sql`INSERT INTO conversation_summaries (conversation_id, context_start, first_message_id, last_message_id, through_turn, through_kind, through_id, text, tokens, model, created_at)
            VALUES (${conversationId}, ${r.contextStart}, ${r.firstMessageId}, ${r.lastMessageId}, ${r.throughTurn}, ${r.throughKind}, ${r.throughId}, ${r.text}, ${r.tokens}, ${r.model}, ${now})`
        ).pipe(Effect.asVoid, Effect.orDie),
      list: listing(undefined).pipe(Effect.orDie)
    })
  })

  static readonly layer = Layer.effect(ContextStore, ContextStore.make)
}
