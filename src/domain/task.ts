import { Schema } from "effect"
import { ConversationId, WorkspaceId } from "./ids.js"

export const TaskKind = Schema.Literal("schedule", "task")
export const TaskStatus = Schema.Literal("active", "done", "cancelled")
export const RunOutcome = Schema.Literal("queued", "delivered", "quiet", "failed", "skipped")
export type RunOutcome = typeof RunOutcome.Type

/** A workspace schedule (`ws:<workspace>`) or a task an agent created; its next due time is stored. */
export class ScheduledTask extends Schema.Class<ScheduledTask>("ScheduledTask")({
  id: Schema.String,
  workspace: WorkspaceId,
  kind: TaskKind,
  conversationId: ConversationId,
  connection: Schema.String,
  place: Schema.String,
  prompt: Schema.String,
  cron: Schema.NullOr(Schema.String),
  timezone: Schema.NullOr(Schema.String),
  everyMs: Schema.NullOr(Schema.Number),
  anchor: Schema.NullOr(Schema.Number),
  at: Schema.NullOr(Schema.Number),
  catchUpMs: Schema.Number,
  notifySkipped: Schema.Boolean,
  pauseAfterMs: Schema.NullOr(Schema.Number),
  dailyTokens: Schema.NullOr(Schema.Number),
  definition: Schema.String,
  status: TaskStatus,
  pausedAt: Schema.NullOr(Schema.Number),
  nextDue: Schema.NullOr(Schema.Number),
  createdAt: Schema.Number,
  updatedAt: Schema.Number
}) {}

/** One due time of a task and what became of it. */
export class TaskRun extends Schema.Class<TaskRun>("TaskRun")({
  taskId: Schema.String,
  dueAt: Schema.Number,
  outcome: RunOutcome,
  messageId: Schema.NullOr(Schema.Number),
  turnId: Schema.NullOr(Schema.Number),
  skippedThrough: Schema.NullOr(Schema.Number),
  /** Why it was skipped (downtime, its daily token cap) or failed. */
  reason: Schema.NullOr(Schema.String),
  createdAt: Schema.Number,
  finishedAt: Schema.NullOr(Schema.Number)
}) {}

/** Start of the UTC day of `now`: a task's `dailyTokens` count from here, like the gateway's daily budgets. */
export const utcMidnight = (now: number): number => now - (now % 86_400_000)
