import { Schema } from "effect"
import { Problem } from "../../domain/errors.js"

/** A registration whose id is malformed (the only registration `register` refuses). */
export class RuntimeDefinitionInvalid extends Schema.TaggedError<RuntimeDefinitionInvalid>()("RuntimeDefinitionInvalid", {
  runtimeId: Schema.NullOr(Schema.String),
  problems: Schema.Array(Problem)
}) {
  override get message() {
    return `invalid agent-session runtime registration${this.runtimeId === null ? "" : ` '${this.runtimeId}'`}: ` +
      this.problems.map((p) => `${p.path || "(root)"}: ${p.reason}`).join("; ")
  }
}

/** No runtime with this id is registered (attach refuses it; reads answer `unknown_runtime` instead). */
export class UnknownRuntime extends Schema.TaggedError<UnknownRuntime>()("UnknownRuntime", {
  runtimeId: Schema.String,
  registered: Schema.Array(Schema.String)
}) {
  override get message() {
    return `no agent-session runtime '${this.runtimeId}' is registered (registered: ${this.registered.join(", ") || "none"})`
  }
}

/** The conversation has no current attachment. */
export class NotAttached extends Schema.TaggedError<NotAttached>()("NotAttached", {
  conversationId: Schema.String
}) {
  override get message() {
    return `conversation '${this.conversationId}' is not attached to an agent session`
  }
}

/** The directory attachment store holds a file it cannot read back. */
export class AttachmentStoreUnreadable extends Schema.TaggedError<AttachmentStoreUnreadable>()("AttachmentStoreUnreadable", {
  file: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `attachment store ${this.file}: ${this.reason}`
  }
}

/** Internal outcomes of one callback call; each becomes an `unavailable` status with `<op>_timeout` / `<op>_failed`. */
export class CallTimedOut extends Schema.TaggedError<CallTimedOut>()("CallTimedOut", {
  op: Schema.String,
  runtimeId: Schema.String,
  timeoutMs: Schema.Number
}) {}

export class CallFailed extends Schema.TaggedError<CallFailed>()("CallFailed", {
  op: Schema.String,
  runtimeId: Schema.String,
  reason: Schema.String
}) {}
