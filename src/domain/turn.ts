import { Schema } from "effect"
import { ConversationId, ExecutorId, HostEpoch, MessageId, TurnId } from "./ids.js"

/**
 * queued → running → completed | failed | interrupted; an interrupted turn is queued again by
 * recovery, a failed attempt below the retry limit is queued again with a not-before time.
 */
export const TurnStatus = Schema.Literal("queued", "running", "completed", "failed", "interrupted")
export type TurnStatus = typeof TurnStatus.Type

export class TurnOwner extends Schema.Class<TurnOwner>("TurnOwner")({
  epoch: HostEpoch,
  executor: ExecutorId
}) {}

export class Turn extends Schema.Class<Turn>("Turn")({
  id: TurnId,
  conversationId: ConversationId,
  status: TurnStatus,
  attempts: Schema.Int,
  owner: Schema.NullOr(TurnOwner),
  /** Epoch millis before which a retry must not start. */
  notBefore: Schema.Number,
  /** Why it failed (or waits for a retry); for a completed turn that ended waiting on a human, `blocked:<state>`. */
  error: Schema.NullOr(Schema.String),
  createdAt: Schema.Number,
  updatedAt: Schema.Number
}) {}

/** message → turn: this turn is answering this message. One claim per message. */
export class DeliveryClaim extends Schema.Class<DeliveryClaim>("DeliveryClaim")({
  messageId: MessageId,
  turnId: TurnId
}) {}
