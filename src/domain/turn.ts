import { Schema } from "effect"
import { ConversationId, ExecutorId, HostEpoch, MessageId, TurnId } from "./ids.js"

/**
 * queued → running → completed | blocked | failed | interrupted; an interrupted turn is queued
 * again by recovery, a failed attempt below the retry limit is queued again with a not-before
 * time. `blocked` is final like `completed`: the turn ended without an answer because what it
 * delegated to waits on a human (the user was told); it is not retried, and the conversation's
 * next message starts a new turn.
 */
export const TurnStatus = Schema.Literal("queued", "running", "completed", "blocked", "failed", "interrupted")
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
  /** Why it failed (or waits for a retry); for a blocked turn, the state it was left waiting in (`needs_input`). */
  error: Schema.NullOr(Schema.String),
  createdAt: Schema.Number,
  updatedAt: Schema.Number
}) {}

/** message → turn: this turn is answering this message. One claim per message. */
export class DeliveryClaim extends Schema.Class<DeliveryClaim>("DeliveryClaim")({
  messageId: MessageId,
  turnId: TurnId
}) {}
