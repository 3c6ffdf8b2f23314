import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { m0002_approvals } from "./migrations/0002_approvals.js"
import { m0003_approvals_single_use } from "./migrations/0003_approvals_single_use.js"
import { m0004_receipt_fingerprint } from "./migrations/0004_receipt_fingerprint.js"
import { m0005_conversation_memory } from "./migrations/0005_conversation_memory.js"
import { m0006_gateway_keys } from "./migrations/0006_gateway_keys.js"
import { m0007_schedules } from "./migrations/0007_schedules.js"
import { m0008_attachment_session_ref } from "./migrations/0008_attachment_session_ref.js"
import { m0009_trace_parent } from "./migrations/0009_trace_parent.js"
import { m0010_turn_blocked } from "./migrations/0010_turn_blocked.js"
import { m0011_schedule_spend } from "./migrations/0011_schedule_spend.js"
import { m0012_event_lookups } from "./migrations/0012_event_lookups.js"
import { m0013_turn_lookups } from "./migrations/0013_turn_lookups.js"
import { m0014_delivery_parts } from "./migrations/0014_delivery_parts.js"
import { m0015_delivery_audio } from "./migrations/0015_delivery_audio.js"
import { m0016_cluster_connections } from "./migrations/0016_cluster_connections.js"
import { m0017_delivery_files } from "./migrations/0017_delivery_files.js"
import { m0018_place_owners } from "./migrations/0018_place_owners.js"
import { ddl } from "./dialect.js"

/**
 * Numbered migrations, applied in order and recorded in `pynchy_migrations`.
 * Never edit a landed one: add the next number.
 */
const m0001_initial = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* ddl`CREATE TABLE conversations (
    id TEXT PRIMARY KEY,
    connection TEXT NOT NULL,
    place TEXT NOT NULL,
    workspace TEXT NOT NULL,
    created_at INTEGER NOT NULL${{ sqlite: "", pg: ",\n    rowid BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE" }}
  )`
  yield* ddl`CREATE TABLE messages (
    id INTEGER PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations(id),
    direction TEXT NOT NULL CHECK (direction IN ('in', 'out')),
    sender TEXT NOT NULL,
    text TEXT NOT NULL,
    metadata TEXT NOT NULL DEFAULT '{}',
    created_at INTEGER NOT NULL,
    handled_by INTEGER ${{ sqlite: "REFERENCES turns(id)", pg: "" }}
  )`
  // Pending inbound work per conversation: the queue's only scan.
  yield* sql`CREATE INDEX messages_pending ON messages (conversation_id, id) WHERE direction = 'in' AND handled_by IS NULL`
  yield* sql`CREATE INDEX messages_conversation ON messages (conversation_id, id)`
  yield* ddl`CREATE TABLE receipts (
    connection TEXT NOT NULL,
    provider_event_id TEXT NOT NULL,
    message_id INTEGER NOT NULL REFERENCES messages(id),
    PRIMARY KEY (connection, provider_event_id)
  ) WITHOUT ROWID`
  yield* ddl`CREATE TABLE cursors (
    connection TEXT NOT NULL,
    stream TEXT NOT NULL,
    position TEXT NOT NULL,
    ord REAL NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (connection, stream)
  ) WITHOUT ROWID`
  yield* ddl`CREATE TABLE turns (
    id INTEGER PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations(id),
    status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed', 'interrupted')),
    attempts INTEGER NOT NULL DEFAULT 0,
    owner_epoch TEXT,
    executor_id TEXT,
    not_before INTEGER NOT NULL DEFAULT 0,
    error TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
  )`
  // Postgres checks a reference when it is made: messages' to turns waits for the turns table.
  yield* sql.onDialectOrElse({
    pg: () => sql`ALTER TABLE messages ADD FOREIGN KEY (handled_by) REFERENCES turns(id)`,
    orElse: () => Effect.void
  })
  // At most one active turn per conversation.
  yield* sql`CREATE UNIQUE INDEX turns_one_active ON turns (conversation_id) WHERE status IN ('queued', 'running', 'interrupted')`
  yield* sql`CREATE INDEX turns_status ON turns (status) WHERE status IN ('queued', 'running', 'interrupted')`
  // One claim per message.
  yield* ddl`CREATE TABLE delivery_claims (
    message_id INTEGER PRIMARY KEY REFERENCES messages(id),
    turn_id INTEGER NOT NULL REFERENCES turns(id)
  )`
  yield* sql`CREATE INDEX delivery_claims_turn ON delivery_claims (turn_id)`
  yield* ddl`CREATE TABLE deliveries (
    id INTEGER PRIMARY KEY,
    idempotency_key TEXT NOT NULL UNIQUE,
    conversation_id TEXT NOT NULL REFERENCES conversations(id),
    turn_id INTEGER REFERENCES turns(id),
    kind TEXT NOT NULL CHECK (kind IN ('reply', 'notice')),
    text TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'sent', 'failed', 'unknown')),
    attempts INTEGER NOT NULL DEFAULT 0,
    error TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
  )`
  yield* sql`CREATE INDEX deliveries_pending ON deliveries (conversation_id, id) WHERE status = 'pending'`
  yield* ddl`CREATE TABLE workspaces (
    id TEXT PRIMARY KEY,
    definition TEXT NOT NULL,
    created_at INTEGER NOT NULL${{ sqlite: "", pg: ",\n    rowid BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE" }}
  )`
  yield* ddl`CREATE TABLE session_bindings (
    conversation_id TEXT PRIMARY KEY REFERENCES conversations(id),
    kind TEXT NOT NULL CHECK (kind IN ('llm', 'attachment')),
    ref TEXT NOT NULL,
    updated_at INTEGER NOT NULL
  )`
  yield* ddl`CREATE TABLE attachments (
    id INTEGER PRIMARY KEY,
    conversation_id TEXT NOT NULL,
    runtime_id TEXT NOT NULL,
    provider TEXT NOT NULL,
    session_ref TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('current', 'superseded', 'detached')),
    replaces INTEGER REFERENCES attachments(id),
    observation_token INTEGER NOT NULL DEFAULT 0,
    last_status TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
  )`
  // One current attachment per conversation.
  yield* sql`CREATE UNIQUE INDEX attachments_one_current ON attachments (conversation_id) WHERE state = 'current'`
  yield* ddl`CREATE TABLE events (
    id INTEGER PRIMARY KEY,
    type TEXT NOT NULL,
    payload TEXT NOT NULL,
    at INTEGER NOT NULL
  )`
  yield* ddl`CREATE TABLE host_runs (
    epoch TEXT PRIMARY KEY,
    pid INTEGER NOT NULL,
    version TEXT NOT NULL,
    started_at INTEGER NOT NULL,
    ready_at INTEGER,
    stopped_at INTEGER${{ sqlite: "", pg: ",\n    rowid BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE" }}
  )`
})

export const migrations = {
  "0001_initial": m0001_initial,
  "0002_approvals": m0002_approvals,
  "0003_approvals_single_use": m0003_approvals_single_use,
  "0004_receipt_fingerprint": m0004_receipt_fingerprint,
  "0005_conversation_memory": m0005_conversation_memory,
  "0006_gateway_keys": m0006_gateway_keys,
  "0007_schedules": m0007_schedules,
  "0008_attachment_session_ref": m0008_attachment_session_ref,
  "0009_trace_parent": m0009_trace_parent,
  "0010_turn_blocked": m0010_turn_blocked,
  "0011_schedule_spend": m0011_schedule_spend,
  "0012_event_lookups": m0012_event_lookups,
  "0013_turn_lookups": m0013_turn_lookups,
  "0014_delivery_parts": m0014_delivery_parts,
  "0015_delivery_audio": m0015_delivery_audio,
  "0016_cluster_connections": m0016_cluster_connections,
  "0017_delivery_files": m0017_delivery_files,
  "0018_place_owners": m0018_place_owners
} as const
