import { Either, Schema } from "effect"
import { controlProblem, placeProblem } from "./place.js"

/** A conversation: one thread on one route (`<connection>:<place>`, e.g. `terminal:default`); never a control character. */
export const ConversationId = Schema.NonEmptyTrimmedString.pipe(
  Schema.maxLength(512),
  Schema.filter((id) => controlProblem(id) ?? true),
  Schema.brand("ConversationId")
)
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
 * `conversationIdOf` for a decoded inbound message's connection (a slug) and place (a `Place`,
 * src/domain/place.ts), which make a valid id by their own checks: not checked again (Ingest's hot path).
 */
export const conversationIdOfChecked = (connection: ConnectionName, place: string): ConversationId =>
  ConversationId.make(`${connection}:${place}`, true)

/**
 * A conversation id a person typed (`pynchy send -c`), split into its connection and place (no
 * `:`: a place of `fallback`) and checked by the rules every way in uses: the reason when it is
 * not one, never the value.
 */
export const parseConversationId = (raw: string, fallback: string): Either.Either<{ readonly connection: ConnectionName; readonly place: string }, string> => {
  const i = raw.indexOf(":")
  const [connection, place] = i >= 0 ? [raw.slice(0, i), raw.slice(i + 1)] : [fallback, raw]
  if (!Schema.is(ConnectionName)(connection)) return Either.left(`the connection (before ':') must be 1-64 characters of a-z, 0-9, '.', '_' or '-'; write <connection>:<place>, e.g. cli:default`)
  const problem = placeProblem(place)
  return problem !== undefined ? Either.left(`the place (after ':') ${problem}`) : Either.right({ connection, place })
}
