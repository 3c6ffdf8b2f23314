import { Schema } from "effect"
import { ConnectionName, ConversationId, MessageId, TurnId } from "./ids.js"

/** Free-form, JSON-serialisable metadata a provider attaches to a message. */
export const Metadata = Schema.Record({ key: Schema.String, value: Schema.Unknown })
export type Metadata = typeof Metadata.Type

export const MessageText = Schema.String.pipe(Schema.maxLength(1_000_000))

/**
 * What a connection hands to ingest. The provider event id is the dedup key (with the connection):
 * the same event ingested twice yields the original message.
 */
export class InboundMessageInput extends Schema.Class<InboundMessageInput>("InboundMessageInput")({
  connection: ConnectionName,
  /** The provider's place: a room id, a chat id, a terminal session name. */
  place: Schema.NonEmptyTrimmedString.pipe(Schema.maxLength(255)),
  providerEventId: Schema.NonEmptyString.pipe(Schema.maxLength(255)),
  sender: Schema.NonEmptyString.pipe(Schema.maxLength(255)),
  text: MessageText,
  metadata: Schema.optionalWith(Metadata, { default: () => ({}) }),
  /** Advance this cursor in the same transaction (it never moves backwards). */
  cursor: Schema.optional(
    Schema.Struct({
      stream: Schema.NonEmptyString,
      position: Schema.String,
      /** Strictly increasing per (connection, stream); an older or equal one is ignored. */
      order: Schema.Number.pipe(Schema.finite())
    })
  )
}) {}

export const Direction = Schema.Literal("in", "out")
export type Direction = typeof Direction.Type

export class Message extends Schema.Class<Message>("Message")({
  id: MessageId,
  conversationId: ConversationId,
  direction: Direction,
  sender: Schema.String,
  text: Schema.String,
  metadata: Metadata,
  createdAt: Schema.Number,
  /** The completed turn that handled an inbound message. */
  handledBy: Schema.NullOr(TurnId)
}) {}

export class Receipt extends Schema.Class<Receipt>("Receipt")({
  connection: ConnectionName,
  providerEventId: Schema.String,
  messageId: MessageId
}) {}

export class Cursor extends Schema.Class<Cursor>("Cursor")({
  connection: ConnectionName,
  stream: Schema.String,
  position: Schema.String,
  order: Schema.Number,
  updatedAt: Schema.Number
}) {}

export interface Ingested {
  readonly messageId: MessageId
  readonly conversationId: ConversationId
  readonly duplicate: boolean
}
