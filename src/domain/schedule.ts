import { Schema } from "effect"

/** `1h`, `30m`, `90s`, `2d`. */
export const WindowText = Schema.String.pipe(Schema.pattern(/^\d+\s*[smhd]$/, { message: () => "must be a number and a unit: s, m, h or d (e.g. 1h)" }))

/** `<connection>:<place>`: where a schedule's turns live and its replies go. */
export const DeliverTo = Schema.String.pipe(
  Schema.pattern(/^[a-z0-9][a-z0-9._-]{0,63}:\S.*$/, { message: () => "must be <connection>:<place> (e.g. cli:daily)" })
)

/** `tasks: { chain }`: whether a turn started by a task may create tasks (default: it may not). */
export const TaskSettings = Schema.Struct({
  chain: Schema.optionalWith(Schema.Boolean, { default: () => false })
})

/**
 * A workspace's periodic turns (docs/schedules.md). Cross-field rules (a schedule needs a prompt
 * and a destination; the cron, zone and connection must exist) are checked with the config.
 */
export const WorkspaceScheduleFields = {
  /** A cron expression: 5 fields, or 6 with seconds first. */
  schedule: Schema.optional(Schema.NonEmptyString),
  /** IANA zone the cron is read in; default the host's. */
  timezone: Schema.optional(Schema.NonEmptyString),
  /** The text of each periodic turn (a message from sender `schedule`). */
  scheduledPrompt: Schema.optional(Schema.NonEmptyString),
  /** `<connection>:<place>`: the conversation the turns run in and replies go to. */
  deliverTo: Schema.optional(DeliverTo),
  /** A run missed while the host was down runs at startup if it is younger than this; else it is skipped. */
  catchUpWindow: Schema.optionalWith(WindowText, { default: () => "1h" }),
  /** Tell the conversation when runs were skipped (default: skipped runs are only recorded). */
  notifySkipped: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  /** With no user message in the conversation for this long, the schedule pauses (the user is told once). */
  pauseAfterIdleDays: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 3650)), { default: () => 14 }),
  /** Most gateway tokens the schedule's turns may spend per UTC day; a run due at or over it is skipped (recorded with the reason). */
  scheduleDailyTokens: Schema.optional(Schema.Int.pipe(Schema.positive())),
  /**
   * Agents may create their own tasks (the `tasks.*` host actions); false hides them. `true` is
   * `{ chain: false }`: a turn started by a task cannot create tasks; `{ chain: true }` lets it,
   * with one-off tasks at least `limits.minTaskIntervalSeconds` ahead.
   */
  tasks: Schema.optionalWith(Schema.Union(Schema.Boolean, TaskSettings), { default: () => true })
}

/** Whether a workspace's agent is offered the `tasks.*` actions. */
export const tasksOffered = (w: { readonly tasks: boolean | typeof TaskSettings.Type }): boolean => w.tasks !== false

/** Whether a turn started by a task may create tasks in this workspace. */
export const tasksChain = (w: { readonly tasks: boolean | typeof TaskSettings.Type }): boolean => typeof w.tasks === "object" && w.tasks.chain
