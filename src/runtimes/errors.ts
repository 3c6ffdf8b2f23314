import { Schema } from "effect"

/** A runtime's close failed or timed out; reported together with the others, never stopping them. */
export class CloseFailure extends Schema.Class<CloseFailure>("CloseFailure")({
  runtime: Schema.String,
  plugin: Schema.String,
  code: Schema.Literal("close_failed", "close_timeout"),
  reason: Schema.String
}) {}

/**
 * Runtime k did not come up: it threw, did not answer by its start deadline, or never reported
 * ready by its readiness deadline. k and every runtime started before it were closed, in reverse.
 */
export class RuntimeStartFailed extends Schema.TaggedError<RuntimeStartFailed>()("RuntimeStartFailed", {
  runtime: Schema.String,
  plugin: Schema.String,
  code: Schema.Literal("start_failed", "start_timeout", "ready_timeout"),
  reason: Schema.String,
  closed: Schema.Array(Schema.String),
  closeFailures: Schema.Array(CloseFailure)
}) {
  override get message() {
    const closes = this.closeFailures.length > 0 ? `; close failures: ${this.closeFailures.map((f) => `${f.runtime} (${f.code}: ${f.reason})`).join(", ")}` : ""
    // Which connection, why, and how to start without it: the user's next step in one line.
    return `connection '${this.runtime}' (plugin '${this.plugin}') could not start (${this.code}): ${this.reason}; ` +
      `the host stops when a connection cannot start: fix the cause, or start without it by setting enabled: false on its routes in pynchy.yaml` +
      ` (closed in reverse: ${this.closed.join(", ") || "none"}${closes})`
  }
}
