import { Schema } from "effect"

/** A conversation: one thread on one route (`<connection>:<place>`, e.g. `terminal:default`). */
export const ConversationId = Schema.NonEmptyTrimmedString.pipe(Schema.maxLength(512), Schema.brand("ConversationId"))
export type ConversationId = typeof ConversationId.Type

/** Messages, turns and deliveries are numbered by the database (rowid: cheap to write and index). */
export const MessageId = Schema.Int.pipe(Schema.positive(), Schema.brand("MessageId"))
export type MessageId = typeof MessageId.Type

export const TurnId = Schema.Int.pipe(Schema.positive(), Schema.brand("TurnId"))
export type TurnId = typeof TurnId.Type

export const DeliveryId = Schema.Int.pipe(Schema.positive(), Schema.brand("DeliveryId"))
export type DeliveryId = typeof DeliveryId.Type

export const AttachmentId = Schema.Int.pipe(Schema.positive(), Schema.brand("AttachmentId"))
export type AttachmentId = typeof AttachmentId.Type

/** Names people write in config: lowercase, digits, `-`, `_`, `.`. */
const Slug = Schema.String.pipe(
  Schema.pattern(/^[a-z0-9][a-z0-9._-]{0,63}$/, {
    message: () => "must be 1-64 characters of a-z, 0-9, '.', '_' or '-', starting with a letter or digit"
  })
)

export const WorkspaceId = Slug.pipe(Schema.brand("WorkspaceId"))
export type WorkspaceId = typeof WorkspaceId.Type

/** A configured provider identity (a Matrix account, the terminal, an HTTP API). */
export const ConnectionName = Slug.pipe(Schema.brand("ConnectionName"))
export type ConnectionName = typeof ConnectionName.Type

/** The epoch of one host process: new at every start. */
export const HostEpoch = Schema.NonEmptyTrimmedString.pipe(Schema.brand("HostEpoch"))
export type HostEpoch = typeof HostEpoch.Type

/** What executes a turn: a sandbox id or an attachment id (`sandbox:<id>`, `attachment:<id>`, `inproc:<id>`). */
export const ExecutorId = Schema.NonEmptyTrimmedString.pipe(Schema.brand("ExecutorId"))
export type ExecutorId = typeof ExecutorId.Type

export const conversationIdOf = (connection: string, place: string): ConversationId =>
  ConversationId.make(`${connection}:${place}`)

/**
 * `conversationIdOf` for a decoded inbound message's connection (a slug) and place (trimmed,
 * 1-255 characters), which make a valid id by their own checks: not checked again (Ingest's hot path).
 */
export const conversationIdOfChecked = (connection: ConnectionName, place: string): ConversationId =>
  ConversationId.make(`${connection}:${place}`, true)
