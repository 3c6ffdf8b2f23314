import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { AgentSessionStatus, Attachment, SessionMetadata } from "../../domain/attachment.js"
import { AttachmentId, ConversationId } from "../../domain/ids.js"
import { JsonColumn } from "../../db/rows.js"
import type { AttachmentStore, Attached } from "./AttachmentStore.js"

// The domain record, its last status and metadata stored as JSON text (the session id in `session_ref`).
const AttachmentRow = Schema.Struct({
  ...Attachment.fields,
  providerSessionId: Schema.NullOr(Schema.String),
  host: Schema.NullOr(Schema.String),
  remoteUrl: Schema.NullOr(Schema.String),
  metadata: Schema.NullOr(JsonColumn(SessionMetadata)),
  lastStatus: Schema.NullOr(JsonColumn(AgentSessionStatus))
})
const columns = `id, conversation_id AS "conversationId", runtime_id AS "runtimeId", provider, session_ref AS "sessionId",
  provider_session_id AS "providerSessionId", host, remote_url AS "remoteUrl", metadata, state, replaces,
  observation_token AS "observationToken", last_status AS "lastStatus", created_at AS "createdAt", updated_at AS "updatedAt"`
const encodeStatus = Schema.encodeSync(JsonColumn(AgentSessionStatus))
const encodeMetadata = Schema.encodeSync(JsonColumn(SessionMetadata))

/** The `attachments` table of the host database; the unique partial index keeps one current per conversation. */
export const makeDatabaseStore = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const toAttachment = (r: typeof AttachmentRow.Type) => Attachment.make(r)

  const currentRow = SqlSchema.findOne({
    Request: ConversationId,
    Result: AttachmentRow,
    execute: (id) => sql`SELECT ${sql.literal(columns)} FROM attachments WHERE conversation_id = ${id} AND state = 'current'`
  })
  const byId = SqlSchema.findOne({
    Request: AttachmentId,
    Result: AttachmentRow,
    execute: (id) => sql`SELECT ${sql.literal(columns)} FROM attachments WHERE id = ${id}`
  })
  const historyRows = SqlSchema.findAll({
    Request: ConversationId,
    Result: AttachmentRow,
    execute: (id) => sql`SELECT ${sql.literal(columns)} FROM attachments WHERE conversation_id = ${id} ORDER BY id`
  })
  const currentRows = SqlSchema.findAll({
    Request: Schema.Void,
    Result: AttachmentRow,
    execute: () => sql`SELECT ${sql.literal(columns)} FROM attachments WHERE state = 'current' ORDER BY conversation_id`
  })

  const service: AttachmentStore.Service = {
    attach: (input) =>
      sql.withTransaction(
        Effect.gen(function* () {
          const previous = yield* currentRow(input.conversationId)
          if (Option.isSome(previous)) {
            yield* sql`UPDATE attachments SET state = 'superseded', updated_at = ${input.now} WHERE id = ${previous.value.id}`
          }
          const replaces = Option.match(previous, { onNone: () => null, onSome: (p) => p.id })
          const inserted = yield* sql<{ id: number }>`INSERT INTO attachments
            (conversation_id, runtime_id, provider, session_ref, provider_session_id, host, remote_url, metadata,
              state, replaces, observation_token, last_status, created_at, updated_at)
            VALUES (${input.conversationId}, ${input.runtimeId}, ${input.provider}, ${input.sessionId}, ${input.providerSessionId ?? null},
              ${input.host ?? null}, ${input.remoteUrl ?? null}, ${input.metadata === undefined ? null : encodeMetadata(input.metadata)},
              'current', ${replaces}, 0, NULL, ${input.now}, ${input.now})
            RETURNING id`
          const attachment = Option.getOrThrow(yield* byId(AttachmentId.make(inserted[0]!.id)))
          const superseded = Option.map(previous, (p) => toAttachment({ ...p, state: "superseded", updatedAt: input.now }))
          return { attachment: toAttachment(attachment), superseded } satisfies Attached
        })
      ).pipe(Effect.orDie, Effect.withSpan("AttachmentStore.attach")),
    detach: (conversationId, now) =>
      sql.withTransaction(
        Effect.gen(function* () {
          const previous = yield* currentRow(conversationId)
          if (Option.isNone(previous)) return Option.none<Attachment>()
          yield* sql`UPDATE attachments SET state = 'detached', updated_at = ${now} WHERE id = ${previous.value.id}`
          return Option.some(toAttachment({ ...previous.value, state: "detached", updatedAt: now }))
        })
      ).pipe(Effect.orDie, Effect.withSpan("AttachmentStore.detach")),
    current: (conversationId) => currentRow(conversationId).pipe(Effect.map(Option.map(toAttachment)), Effect.orDie),
    history: (conversationId) => historyRows(conversationId).pipe(Effect.map((rows) => rows.map(toAttachment)), Effect.orDie),
    currents: currentRows(undefined).pipe(Effect.map((rows) => rows.map(toAttachment)), Effect.orDie),
    applyStatus: (id, token, status, now) =>
      sql`UPDATE attachments SET observation_token = ${token}, last_status = ${encodeStatus(status)}, updated_at = ${now}
        WHERE id = ${id} AND state = 'current' AND observation_token < ${token} RETURNING id`.pipe(
        Effect.map((rows) => rows.length > 0),
        Effect.orDie
      ),
    maxObservationToken: sql<{ max: number | null }>`SELECT MAX(observation_token) AS max FROM attachments`.pipe(
      Effect.map((rows) => rows[0]?.max ?? 0),
      Effect.orDie
    )
  }
  return service
})
