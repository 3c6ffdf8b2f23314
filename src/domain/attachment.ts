import { Schema } from "effect"
import { AttachmentId, ConversationId } from "./ids.js"

/** What an agent-session runtime reports about one session. */
export const AgentSessionState = Schema.Literal("running", "idle", "finished", "unavailable", "unknown")
export type AgentSessionState = typeof AgentSessionState.Type

export class AgentSessionStatus extends Schema.Class<AgentSessionStatus>("AgentSessionStatus")({
  state: AgentSessionState,
  /** Why it is unavailable or unknown: `inspect_timeout`, `unknown_runtime`, `callback_failed`, ... */
  code: Schema.optional(Schema.String),
  detail: Schema.optional(Schema.String),
  /** Recent output, when the runtime offers it. */
  output: Schema.optional(Schema.String)
}) {}

export const AttachmentState = Schema.Literal("current", "superseded", "detached")
export type AttachmentState = typeof AttachmentState.Type

/** conversation → external agent session, with lineage (replaced records are kept). */
export class Attachment extends Schema.Class<Attachment>("Attachment")({
  id: AttachmentId,
  conversationId: ConversationId,
  runtimeId: Schema.NonEmptyString,
  provider: Schema.NonEmptyString,
  sessionRef: Schema.NonEmptyString,
  state: AttachmentState,
  replaces: Schema.NullOr(AttachmentId),
  /** The token of the last applied observation; 0 before any. */
  observationToken: Schema.Int,
  lastStatus: Schema.NullOr(AgentSessionStatus),
  createdAt: Schema.Number,
  updatedAt: Schema.Number
}) {}
