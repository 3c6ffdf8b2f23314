import { Schema } from "effect"
import { ConversationId, DeliveryId, TurnId } from "./ids.js"

/** pending until the channel answers; then sent, failed (the user is told) or unknown (ambiguous). */
export const DeliveryStatus = Schema.Literal("pending", "sent", "failed", "unknown")
export type DeliveryStatus = typeof DeliveryStatus.Type

export const DeliveryKind = Schema.Literal("reply", "notice")
export type DeliveryKind = typeof DeliveryKind.Type

export class Delivery extends Schema.Class<Delivery>("Delivery")({
  id: DeliveryId,
  /** Stable across resends: `t<turn>:<n>` for replies; channels that can, derive their txn id from it. */
  idempotencyKey: Schema.NonEmptyString,
  conversationId: ConversationId,
  turnId: Schema.NullOr(TurnId),
  kind: DeliveryKind,
  text: Schema.String,
  status: DeliveryStatus,
  attempts: Schema.Int,
  error: Schema.NullOr(Schema.String),
  createdAt: Schema.Number,
  updatedAt: Schema.Number,
  /** The W3C trace context of the span that recorded it: its send continues that trace. */
  traceParent: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null })
}) {}
