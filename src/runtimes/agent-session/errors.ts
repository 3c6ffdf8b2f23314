import { Schema } from "effect"
import { Problem } from "../../domain/errors.js"

/** A second registration under an id already taken; the earlier registration stays. */
export class DuplicateRuntime extends Schema.TaggedError<DuplicateRuntime>()("DuplicateRuntime", {
  runtimeId: Schema.String,
  /** The provider of the registration that stays. */
  existingProvider: Schema.String
}) {
  override get message() {
    return `agent-session runtime '${this.runtimeId}' is already registered (provider '${this.existingProvider}'); the new registration was refused`
  }
}

/** A registration that is not `{ id, provider, inspect, continue?, detach? }`. */
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

/** Internal outcomes of one callback call; each becomes an `unavailable` status with its own code. */
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

export class CallMalformed extends Schema.TaggedError<CallMalformed>()("CallMalformed", {
  op: Schema.String,
  runtimeId: Schema.String,
  problems: Schema.Array(Problem)
}) {}
