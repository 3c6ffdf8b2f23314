import { Schema } from "effect"
import { AttachmentId, ConversationId } from "./ids.js"

/**
 * The closed vocabulary of an agent session's state (ClawConnect's): a runtime cannot add a word
 * no consumer knows. `idle` and `completed` both mean the turn finished (runtimes name their
 * success differently); `unavailable` means it could not be asked (not that it failed);
 * `unknown` means it answered nothing recognizable.
 */
export const AgentSessionState = Schema.Literal(
  "starting",
  "running",
  "idle",
  "needs_input",
  "needs_permission",
  "completed",
  "stale",
  "dead",
  "failed",
  "unavailable",
  "unknown"
)
export type AgentSessionState = typeof AgentSessionState.Type

/** The states whose text is the answer to a turn: the only ones that carry `finalResponse`. */
export const completedTurnStates: ReadonlyArray<AgentSessionState> = ["completed", "idle"]
/** The session waits on a human: actionable, never a failure and never a finished turn. */
export const blockedStates: ReadonlyArray<AgentSessionState> = ["needs_input", "needs_permission"]
/** The session stopped: the only states that keep a `termination`. */
export const terminalStates: ReadonlyArray<AgentSessionState> = ["completed", "idle", "dead", "failed"]
/** Still working: a delegated turn waits for these to end. */
export const workingStates: ReadonlyArray<AgentSessionState> = ["starting", "running", "stale"]

/** A read that could not be made (not a state of the session): `unknown_runtime`, `<op>_timeout` ... */
export const AgentSessionError = Schema.Struct({ code: Schema.String, message: Schema.String })
export type AgentSessionError = typeof AgentSessionError.Type

export const TerminationReason = Schema.Literal("completed", "cancelled", "failed", "died", "unknown")

export const AgentSessionTermination = Schema.Struct({
  reason: TerminationReason,
  at: Schema.optional(Schema.Number),
  exitCode: Schema.optional(Schema.Number),
  message: Schema.optional(Schema.String)
})
export type AgentSessionTermination = typeof AgentSessionTermination.Type

/** Runtime-specific extras: strings only, so a record stays plain JSON. */
export const SessionMetadata = Schema.Record({ key: Schema.String, value: Schema.String })

/**
 * One normalized observation of a session (see `normalizeObservation`). Identity (runtime,
 * provider, sessionId) always comes from the attachment that was asked about, never the reply.
 */
export class AgentSessionStatus extends Schema.Class<AgentSessionStatus>("AgentSessionStatus")({
  runtime: Schema.String,
  provider: Schema.optional(Schema.String),
  sessionId: Schema.String,
  providerSessionId: Schema.optional(Schema.String),
  host: Schema.optional(Schema.String),
  remoteUrl: Schema.optional(Schema.String),
  state: AgentSessionState,
  /** Liveness; absent when the runtime could not tell (which is not "gone"). */
  alive: Schema.optional(Schema.Boolean),
  startedAt: Schema.optional(Schema.Number),
  lastEventAt: Schema.optional(Schema.Number),
  /** The session's latest text, whatever its state. */
  latestResponse: Schema.optional(Schema.String),
  /** The turn's answer: only in a completed-turn state (`completed`, `idle`). */
  finalResponse: Schema.optional(Schema.String),
  detail: Schema.optional(Schema.String),
  error: Schema.optional(AgentSessionError),
  termination: Schema.optional(AgentSessionTermination),
  metadata: Schema.optional(SessionMetadata),
  /** When this read ran (epoch ms). */
  reconciledAt: Schema.Number
}) {}

export const AttachmentState = Schema.Literal("current", "superseded", "detached")
export type AttachmentState = typeof AttachmentState.Type

const optionalNull = <A, I>(schema: Schema.Schema<A, I>) => Schema.optionalWith(Schema.NullOr(schema), { default: () => null })

/** conversation → external agent session, with lineage (replaced records are kept). */
export class Attachment extends Schema.Class<Attachment>("Attachment")({
  id: AttachmentId,
  conversationId: ConversationId,
  runtimeId: Schema.NonEmptyString,
  /** The provider of the runtime at attach time ("" when the runtime named none). */
  provider: Schema.String,
  /** The session's id in its runtime's own namespace (a tmux target, a thread id ...). */
  sessionId: Schema.NonEmptyString,
  providerSessionId: optionalNull(Schema.String),
  host: optionalNull(Schema.String),
  remoteUrl: optionalNull(Schema.String),
  metadata: optionalNull(SessionMetadata),
  state: AttachmentState,
  replaces: Schema.NullOr(AttachmentId),
  /** The token of the last applied observation; 0 before any. */
  observationToken: Schema.Int,
  lastStatus: Schema.NullOr(AgentSessionStatus),
  createdAt: Schema.Number,
  updatedAt: Schema.Number
}) {}
