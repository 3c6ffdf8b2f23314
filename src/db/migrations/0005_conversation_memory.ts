import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { ddl } from "../dialect.js"

/**
 * Conversation memory: durable summaries of what fell out of the history window, the context
 * start `/new` moves, and the index the history query reads delivered replies through.
 */
export const m0005_conversation_memory = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  // A summary covers every history entry up to its `through` position (turn, kind 0 = user
  // message / 1 = reply, id) under one context start; the newest one is the one sent.
  yield* ddl`CREATE TABLE conversation_summaries (
    id INTEGER PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations(id),
    context_start INTEGER NOT NULL,
    first_message_id INTEGER,
    last_message_id INTEGER,
    through_turn INTEGER NOT NULL,
    through_kind INTEGER NOT NULL CHECK (through_kind IN (0, 1)),
    through_id INTEGER NOT NULL,
    text TEXT NOT NULL,
    tokens INTEGER NOT NULL,
    model TEXT NOT NULL,
    created_at INTEGER NOT NULL
  )`
  yield* sql`CREATE INDEX conversation_summaries_latest ON conversation_summaries (conversation_id, context_start, id)`
  // Where a conversation's context starts: the last /new message and the turn that handled it.
  // Nothing before it is sent again; nothing is deleted.
  yield* ddl`CREATE TABLE conversation_starts (
    conversation_id TEXT PRIMARY KEY REFERENCES conversations(id),
    message_id INTEGER NOT NULL,
    turn_id INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
  ) WITHOUT ROWID`
  yield* sql`CREATE INDEX deliveries_sent_replies ON deliveries (conversation_id, id) WHERE kind = 'reply' AND status = 'sent'`
})
