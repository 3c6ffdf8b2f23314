import { SqlClient, SqlSchema } from "@effect/sql"
import { Clock, Context, Effect, Layer, Option, Schema } from "effect"
import { ConnectionName, ConversationId, MessageId, TurnId, WorkspaceId } from "../domain/ids.js"
import { Cursor, Direction, Message, type Ingested } from "../domain/message.js"
import { Conversation } from "../domain/workspace.js"
import { MetadataColumn } from "./rows.js"
import * as Tx from "./Transactions.js"

/** One inbound message, already routed to its conversation, as the store writes it. */
export interface IngestRow {
  readonly conversationId: ConversationId
  readonly connection: ConnectionName
  readonly place: string
  readonly workspace: WorkspaceId
  readonly providerEventId: string
  readonly sender: string
  readonly text: string
  readonly metadata: Record<string, unknown>
  /** Stored with the receipt; a known event id with another fingerprint is a conflict. */
  readonly fingerprint?: string | undefined
  readonly cursor?: { readonly stream: string; readonly position: string; readonly order: number } | undefined
  /** The W3C trace context of the span that ingested it (src/telemetry/trace-context.ts). */
  readonly traceParent?: string | null | undefined
}

/** An event id seen in a batch: known from a receipt, or fresh (first written by this batch). */
interface Known {
  readonly id: number
  readonly conversationId: ConversationId
  readonly fingerprint: string | undefined
  readonly fresh: boolean
}

const knownReceipt = `SELECT r.message_id AS id, m.conversation_id AS conv, r.fingerprint AS f
  FROM receipts r JOIN messages m ON m.id = r.message_id WHERE r.connection = ? AND r.provider_event_id = ?`
const insertConversation = "INSERT INTO conversations (id, connection, place, workspace, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
const insertMessage = "INSERT INTO messages (conversation_id, direction, sender, text, metadata, created_at, trace_parent) VALUES (?, 'in', ?, ?, ?, ?, ?)"
// On SQLite the receipt was just looked up under the one write lock: it never conflicts. On
// Postgres another connection may have written it since: its insert waits for that commit, and
// then does nothing.
const insertReceipt = "INSERT INTO receipts (connection, provider_event_id, message_id, fingerprint) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING"
const upsertCursorSql = `INSERT INTO cursors (connection, stream, position, ord, updated_at) VALUES (?, ?, ?, ?, ?)
  ON CONFLICT (connection, stream) DO UPDATE SET position = excluded.position, ord = excluded.ord, updated_at = excluded.updated_at
  WHERE excluded.ord > cursors.ord`

/** A message's columns as `MessageRow` reads them (`m` is the messages table's alias). */
export const messageColumns = `m.id, m.conversation_id AS "conversationId", m.direction, m.sender, m.text, m.metadata, m.created_at AS "createdAt", m.handled_by AS "handledBy", m.trace_parent AS "traceParent"`
export const conversationColumns = `id, connection, place, workspace, created_at AS "createdAt"`

export const MessageRow = Schema.Struct({
  id: MessageId,
  conversationId: ConversationId,
  direction: Direction,
  sender: Schema.String,
  text: Schema.String,
  metadata: MetadataColumn,
  createdAt: Schema.Number,
  handledBy: Schema.NullOr(TurnId),
  traceParent: Schema.NullOr(Schema.String)
})

export const ConversationRow = Schema.Struct({
  id: ConversationId,
  connection: ConnectionName,
  place: Schema.String,
  workspace: WorkspaceId,
  createdAt: Schema.Number
})

/** Rows read on the synchronous path: decoded once, the domain classes built without re-validating. */
const decodeMessageRow = Schema.decodeUnknownSync(MessageRow)
const decodeConversationRow = Schema.decodeUnknownSync(ConversationRow)
export const messageOfRow = (row: unknown): Message => Message.make(decodeMessageRow(row), true)
export const conversationOfRow = (row: unknown): Conversation => Conversation.make(decodeConversationRow(row), true)

const CursorRow = Schema.Struct({
  connection: ConnectionName,
  stream: Schema.String,
  position: Schema.String,
  order: Schema.Number,
  updatedAt: Schema.Number
})

export declare namespace MessageStore {
  /** Conversations, messages, receipts and cursors: the inbound aggregate. */
  export interface Service {
    /**
     * Writes a batch of inbound messages in ONE transaction: a receipt per (connection, provider
     * event id), the message, conversation rows on first sight, and cursor advances (forward only).
     * A known receipt, or a repeat inside the batch, yields the original id with `duplicate: true`;
     * when both it and the row carry a fingerprint and they differ, also `conflict: true`, and that
     * row writes nothing (its cursor included).
     */
    readonly ingestBatch: (rows: ReadonlyArray<IngestRow>) => Effect.Effect<ReadonlyArray<Ingested>>
    readonly appendOutbound: (input: {
      readonly conversationId: ConversationId
      readonly sender: string
      readonly text: string
      readonly metadata?: Record<string, unknown>
    }) => Effect.Effect<MessageId>
    readonly get: (id: MessageId) => Effect.Effect<Option.Option<Message>>
    /** The last `limit` messages of a conversation, oldest first. */
    readonly recent: (conversationId: ConversationId, limit: number) => Effect.Effect<ReadonlyArray<Message>>
    readonly byIds: (ids: ReadonlyArray<MessageId>) => Effect.Effect<ReadonlyArray<Message>>
    readonly conversation: (id: ConversationId) => Effect.Effect<Option.Option<Conversation>>
    readonly conversations: Effect.Effect<ReadonlyArray<Conversation>>
    readonly ensureConversation: (c: Omit<Conversation, "createdAt">) => Effect.Effect<void>
    readonly cursor: (connection: ConnectionName, stream: string) => Effect.Effect<Option.Option<Cursor>>
    /** Moves the cursor to `position` if `order` is above the stored one; true when it moved. */
    readonly advanceCursor: (connection: ConnectionName, stream: string, position: string, order: number) => Effect.Effect<boolean>
  }
}

export class MessageStore extends Context.Tag("pynchy/MessageStore")<MessageStore, MessageStore.Service>() {
  static readonly make = Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const { transaction } = yield* Tx.Transactions

    // The hot path: one transaction program (on SQLite synchronous prepared statements, a few µs
    // each; through SqlClient a statement costs an Effect, a span and the connection permit).
    const ingestBatch = (rows: ReadonlyArray<IngestRow>): Effect.Effect<ReadonlyArray<Ingested>> => {
      if (rows.length === 0) return Effect.succeed([])
      return Effect.flatMap(Clock.currentTimeMillis, (now) => transaction(() => writeBatch(rows, now))).pipe(
        Effect.orDie,
        Effect.withSpan("MessageStore.ingestBatch", { captureStackTrace: false })
      )
    }

    // Ids the database assigned or holds are not validated again (a brand's check per row).
    const known = (receipt: { id: number; conv: string; f: string | null }): Known =>
      ({ id: receipt.id, conversationId: ConversationId.make(receipt.conv, true), fingerprint: receipt.f ?? undefined, fresh: false })

    const writeBatch = function* (rows: ReadonlyArray<IngestRow>, now: number): Tx.Program<ReadonlyArray<Ingested>> {
      // What each event id stands for: its message and the fingerprint it was first written with.
      const seen = new Map<string, Known>()
      const conversations = new Set<string>()
      const results: Array<Ingested> = []
      for (const r of rows) {
        const key = `${r.connection}\u0000${r.providerEventId}`
        let k = seen.get(key)
        if (k === undefined) {
          const receipt = yield* Tx.get<{ id: number; conv: string; f: string | null }>(knownReceipt, r.connection, r.providerEventId)
          if (receipt !== undefined) {
            k = known(receipt)
          } else {
            if (!conversations.has(r.conversationId)) {
              conversations.add(r.conversationId)
              yield* Tx.run(insertConversation, r.conversationId, r.connection, r.place, r.workspace, now)
            }
            const id = yield* Tx.insert(insertMessage, r.conversationId, r.sender, r.text, JSON.stringify(r.metadata), now, r.traceParent ?? null)
            // A missing fingerprint is stored as SQL NULL.
            if ((yield* Tx.run(insertReceipt, r.connection, r.providerEventId, id, r.fingerprint ?? null)) === 1) {
              seen.set(key, { id, conversationId: r.conversationId, fingerprint: r.fingerprint, fresh: true })
              results.push({ messageId: MessageId.make(id, true), conversationId: r.conversationId, duplicate: false, conflict: false })
              continue
            }
            // Postgres only: a concurrent writer committed this event id first; its message stands.
            yield* Tx.run("DELETE FROM messages WHERE id = ?", id)
            k = known((yield* Tx.get<{ id: number; conv: string; f: string | null }>(knownReceipt, r.connection, r.providerEventId))!)
          }
          seen.set(key, k)
        }
        // Every other row of a known event id is a duplicate, or a conflict when both sides carry
        // a fingerprint and they differ.
        const conflict = r.fingerprint !== undefined && k.fingerprint !== undefined && r.fingerprint !== k.fingerprint
        results.push({ messageId: MessageId.make(k.id, true), conversationId: k.conversationId, duplicate: true, conflict })
      }
      // Cursors advance for duplicates too: a replay after a crash still moves the position on.
      // A conflict writes nothing: its input is not the message it claims to be.
      const cursors = new Map<string, IngestRow>()
      rows.forEach((r, i) => {
        if (r.cursor === undefined || results[i]!.conflict) return
        const key = `${r.connection}\u0000${r.cursor.stream}`
        const prev = cursors.get(key)
        if (prev === undefined || prev.cursor!.order < r.cursor.order) cursors.set(key, r)
      })
      for (const r of cursors.values()) yield* Tx.run(upsertCursorSql, r.connection, r.cursor!.stream, r.cursor!.position, r.cursor!.order, now)
      return results
    }

    const upsertCursor = (connection: string, stream: string, position: string, order: number, now: number) =>
      sql<{ moved: number }>`INSERT INTO cursors (connection, stream, position, ord, updated_at)
        VALUES (${connection}, ${stream}, ${position}, ${order}, ${now})
        ON CONFLICT (connection, stream) DO UPDATE SET position = excluded.position, ord = excluded.ord, updated_at = excluded.updated_at
        WHERE excluded.ord > cursors.ord
        RETURNING 1 AS moved`.pipe(Effect.map((r) => r.length > 0))

    const findMessage = SqlSchema.findOne({
      Request: MessageId,
      Result: MessageRow,
      execute: (id) => sql`SELECT id, conversation_id AS "conversationId", direction, sender, text, metadata, created_at AS "createdAt", handled_by AS "handledBy", trace_parent AS "traceParent" FROM messages WHERE id = ${id}`
    })
    const recentMessages = SqlSchema.findAll({
      Request: Schema.Struct({ conversationId: ConversationId, limit: Schema.Int }),
      Result: MessageRow,
      execute: ({ conversationId, limit }) => sql`SELECT * FROM (
          SELECT id, conversation_id AS "conversationId", direction, sender, text, metadata, created_at AS "createdAt", handled_by AS "handledBy", trace_parent AS "traceParent"
          FROM messages WHERE conversation_id = ${conversationId} ORDER BY id DESC LIMIT ${limit}
        ) AS latest ORDER BY id ASC`
    })
    const messagesByIds = SqlSchema.findAll({
      Request: Schema.Array(MessageId),
      Result: MessageRow,
      execute: (ids) => sql`SELECT id, conversation_id AS "conversationId", direction, sender, text, metadata, created_at AS "createdAt", handled_by AS "handledBy", trace_parent AS "traceParent"
        FROM messages WHERE ${sql.in("id", ids)} ORDER BY id`
    })
    const findConversation = SqlSchema.findOne({
      Request: ConversationId,
      Result: ConversationRow,
      execute: (id) => sql`SELECT id, connection, place, workspace, created_at AS "createdAt" FROM conversations WHERE id = ${id}`
    })
    const allConversations = SqlSchema.findAll({
      Request: Schema.Void,
      Result: ConversationRow,
      execute: () => sql`SELECT id, connection, place, workspace, created_at AS "createdAt" FROM conversations ORDER BY created_at, id`
    })
    const findCursor = SqlSchema.findOne({
      Request: Schema.Struct({ connection: ConnectionName, stream: Schema.String }),
      Result: CursorRow,
      execute: ({ connection, stream }) =>
        sql`SELECT connection, stream, position, ord AS "order", updated_at AS "updatedAt" FROM cursors WHERE connection = ${connection} AND stream = ${stream}`
    })

    return MessageStore.of({
      ingestBatch,
      appendOutbound: Effect.fn("MessageStore.appendOutbound")(function* (input) {
        const now = yield* Clock.currentTimeMillis
        const rows = yield* sql<{ id: number }>`INSERT INTO messages (conversation_id, direction, sender, text, metadata, created_at)
          VALUES (${input.conversationId}, 'out', ${input.sender}, ${input.text}, ${JSON.stringify(input.metadata ?? {})}, ${now}) RETURNING id`
        return MessageId.make(rows[0]!.id)
      }, Effect.orDie),
      get: (id) => findMessage(id).pipe(Effect.map(Option.map((r) => Message.make(r))), Effect.orDie),
      recent: (conversationId, limit) => recentMessages({ conversationId, limit }).pipe(Effect.map((rs) => rs.map((r) => Message.make(r))), Effect.orDie),
      byIds: (ids) => messagesByIds(ids).pipe(Effect.map((rs) => rs.map((r) => Message.make(r))), Effect.orDie),
      conversation: (id) => findConversation(id).pipe(Effect.map(Option.map((r) => Conversation.make(r))), Effect.orDie),
      conversations: allConversations(undefined).pipe(Effect.map((rs) => rs.map((r) => Conversation.make(r))), Effect.orDie),
      ensureConversation: (c) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => sql`INSERT INTO conversations (id, connection, place, workspace, created_at) VALUES (${c.id}, ${c.connection}, ${c.place}, ${c.workspace}, ${now}) ON CONFLICT DO NOTHING`).pipe(Effect.asVoid, Effect.orDie),
      cursor: (connection, stream) => findCursor({ connection, stream }).pipe(Effect.map(Option.map((r) => Cursor.make(r))), Effect.orDie),
      advanceCursor: (connection, stream, position, order) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => upsertCursor(connection, stream, position, order, now)).pipe(Effect.orDie)
    })
  })

  static readonly layer = Layer.effect(MessageStore, MessageStore.make)
}
