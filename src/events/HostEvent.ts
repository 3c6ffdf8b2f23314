/**
 * The host's events: one typed stream of what happened to messages, turns, sandboxes, gateway
 * calls, deliveries, approvals, runtimes and schedules (docs/observability.md lists each kind).
 * Every event has its `type`, `at` (epoch millis, from the Clock) and the ids that let a trace
 * join it to the rest: message, conversation, turn, delivery, workspace. No event carries message
 * content, a prompt, a reply or a credential.
 *
 * The schemas decode the event log's rows (`pynchy trace`); publishers build plain objects.
 */
import { Schema } from "effect"

const Id = Schema.Int
const Millis = Schema.Number
const kind = <T extends string, F extends Schema.Struct.Fields>(type: T, fields: F) =>
  Schema.Struct({ type: Schema.Literal(type), at: Millis, ...fields })

// ---- messages and routing ----------------------------------------------------------------

/** A new inbound message was committed (receipt + message in one transaction). */
export const MessageIngested = kind("message.ingested", {
  messageId: Id,
  conversationId: Schema.String,
  workspace: Schema.String,
  connection: Schema.String,
  place: Schema.String,
  providerEventId: Schema.String
})
/** A provider event already ingested came again; `messageId` is the original message. */
export const MessageDeduplicated = kind("message.deduplicated", {
  messageId: Id,
  conversationId: Schema.String,
  connection: Schema.String,
  place: Schema.String,
  providerEventId: Schema.String,
  /** It came with another fingerprint: nothing was changed. */
  conflict: Schema.Boolean
})
/** No enabled route covers (connection, place): the message was refused, nothing was stored. */
export const MessageNoRoute = kind("message.no_route", {
  conversationId: Schema.String,
  connection: Schema.String,
  place: Schema.String,
  providerEventId: Schema.String,
  /** A route for this place exists but is disabled. */
  disabled: Schema.Boolean
})

// ---- turns -------------------------------------------------------------------------------

/** The dispatcher was told the conversation has work; `running`: its current turn must end first. */
export const TurnQueued = kind("turn.queued", {
  conversationId: Schema.String,
  running: Schema.Boolean
})
/** An attempt of a turn started (a new turn, a retry, or a survivor adopted after a restart). */
export const TurnStarted = kind("turn.started", {
  turnId: Id,
  conversationId: Schema.String,
  attempt: Schema.Int,
  executor: Schema.String,
  messageIds: Schema.Array(Id),
  adopted: Schema.Boolean
})
/** The attempt failed with a retryable code; the turn is queued again, due at `notBefore`. */
export const TurnRetried = kind("turn.retried", {
  turnId: Id,
  conversationId: Schema.String,
  attempt: Schema.Int,
  code: Schema.String,
  notBefore: Millis
})
/** The turn failed for good (the user got a notice). */
export const TurnFailed = kind("turn.failed", {
  turnId: Id,
  conversationId: Schema.String,
  attempt: Schema.Int,
  code: Schema.String
})
/** The turn completed; `code` is `ok`, or `blocked:<state>` for a turn that ended waiting on a human. */
export const TurnCompleted = kind("turn.completed", {
  turnId: Id,
  conversationId: Schema.String,
  attempt: Schema.Int,
  code: Schema.String
})

// ---- sandboxes ---------------------------------------------------------------------------

export const SandboxStarted = kind("sandbox.started", {
  turnId: Id,
  conversationId: Schema.String,
  workspace: Schema.String,
  executor: Schema.String,
  /** The container runtime (bwrap, process, a plugin's). */
  runtime: Schema.String
})
/** The runner finished (`done`) or the attempt failed inside the sandbox (`failed`, with its code). */
export const SandboxExited = kind("sandbox.exited", {
  turnId: Id,
  conversationId: Schema.String,
  executor: Schema.String,
  runtime: Schema.String,
  status: Schema.Literal("done", "failed"),
  code: Schema.NullOr(Schema.String),
  durationMs: Millis
})

// ---- the gateway -------------------------------------------------------------------------

/** One request through the LLM gateway, settled (the accounting record: budgets reseed from it). */
export const GatewayCall = kind("gateway.call", {
  workspace: Schema.String,
  conversationId: Schema.String,
  /** The turn whose token made the call; null for the host's own calls (summaries) and gateway keys. */
  turnId: Schema.NullOr(Id),
  model: Schema.String,
  deployment: Schema.String,
  api: Schema.String,
  stream: Schema.Boolean,
  status: Schema.Int,
  outcome: Schema.Literal("ok", "upstream_error", "dropped", "client_closed"),
  inputTokens: Schema.Int,
  outputTokens: Schema.Int,
  cacheReadTokens: Schema.Int,
  cacheWriteTokens: Schema.Int,
  /** What the budgets were charged. */
  totalTokens: Schema.Int,
  estimated: Schema.Boolean,
  /** Gateway receipt to last byte. */
  latencyMs: Millis,
  /** Attempts after the first (another deployment or the same one again). */
  retries: Schema.Int
})
export const BudgetExceeded = kind("gateway.budget_exceeded", {
  workspace: Schema.String,
  conversationId: Schema.String,
  turnId: Schema.NullOr(Id),
  scope: Schema.Literal("workspace-daily", "turn"),
  limit: Schema.Number,
  used: Schema.Number,
  reserved: Schema.Number,
  requested: Schema.Number,
  resetsAt: Schema.NullOr(Millis),
  /** A sentence fit to show the user. */
  message: Schema.String
})
/** A deployment is cooling down after failures or a Retry-After. */
export const GatewayCooldown = kind("gateway.cooldown", {
  deployment: Schema.String,
  until: Millis,
  reason: Schema.Literal("failures", "retry-after")
})

// ---- deliveries --------------------------------------------------------------------------

const delivery = {
  deliveryId: Id,
  idempotencyKey: Schema.String,
  conversationId: Schema.String,
  turnId: Schema.NullOr(Id),
  kind: Schema.Literal("reply", "notice")
}
/** A delivery row was written (before any channel call). */
export const DeliveryRecorded = kind("delivery.recorded", delivery)
export const DeliverySent = kind("delivery.sent", { ...delivery, attempt: Schema.Int })
/** The channel refused it (the user is told). */
export const DeliveryFailed = kind("delivery.failed", { ...delivery, attempt: Schema.Int, reason: Schema.String })
/** It may or may not have reached the platform (a crash mid-send, a timeout without idempotent resends). */
export const DeliveryUnknown = kind("delivery.unknown", { ...delivery, attempt: Schema.Int, reason: Schema.String })

// ---- approvals ---------------------------------------------------------------------------

export const ApprovalAsked = kind("approval.asked", {
  code: Schema.String,
  conversationId: Schema.String,
  turnId: Schema.NullOr(Id),
  action: Schema.String,
  risk: Schema.String,
  expiresAt: Millis
})
export const ApprovalDecided = kind("approval.decided", {
  code: Schema.String,
  conversationId: Schema.String,
  action: Schema.String,
  status: Schema.Literal("approved", "denied", "expired")
})

// ---- connection runtimes -----------------------------------------------------------------

export const RuntimeReady = kind("runtime.ready", { runtime: Schema.String, plugin: Schema.String })
export const RuntimeUnready = kind("runtime.unready", { runtime: Schema.String, plugin: Schema.String })

// ---- schedules ---------------------------------------------------------------------------

/** A due task ran: its message is committed and the conversation signalled. */
export const ScheduleRun = kind("schedule.run", {
  taskId: Schema.String,
  conversationId: Schema.String,
  dueAt: Millis
})
/** A due run did not happen: `too_old` (missed while the host was down) or `paused` (no user message for too long). */
export const ScheduleSkipped = kind("schedule.skipped", {
  taskId: Schema.String,
  conversationId: Schema.String,
  dueAt: Millis,
  reason: Schema.Literal("too_old", "paused")
})

// ---- conversation memory -----------------------------------------------------------------

/** A summary of older history could not be made; the turn went on with what fits. */
export const MemorySummaryFailed = kind("memory.summary_failed", {
  conversationId: Schema.String,
  workspace: Schema.String,
  turnId: Id,
  code: Schema.String
})

export const HostEvent = Schema.Union(
  MessageIngested,
  MessageDeduplicated,
  MessageNoRoute,
  TurnQueued,
  TurnStarted,
  TurnRetried,
  TurnFailed,
  TurnCompleted,
  SandboxStarted,
  SandboxExited,
  GatewayCall,
  BudgetExceeded,
  GatewayCooldown,
  DeliveryRecorded,
  DeliverySent,
  DeliveryFailed,
  DeliveryUnknown,
  ApprovalAsked,
  ApprovalDecided,
  RuntimeReady,
  RuntimeUnready,
  ScheduleRun,
  ScheduleSkipped,
  MemorySummaryFailed
)
export type HostEvent = typeof HostEvent.Type
export type HostEventType = HostEvent["type"]
/** The event of one kind: `EventOf<"turn.failed">`. */
export type EventOf<T extends HostEventType> = Extract<HostEvent, { readonly type: T }>

/** Every kind, in the order docs/observability.md lists them. */
export const HOST_EVENT_TYPES: ReadonlyArray<HostEventType> = HostEvent.members.map((m) => m.fields.type.literals[0])
