import { Schema } from "effect"

/** One problem in an external input: where (a dotted path) and why. */
export class Problem extends Schema.Class<Problem>("Problem")({
  path: Schema.String,
  reason: Schema.String
}) {}

/** An input at a boundary (ingest payload, IPC message, HTTP body, module export) failed to decode. */
export class InvalidInput extends Schema.TaggedError<InvalidInput>()("InvalidInput", {
  what: Schema.String,
  problems: Schema.Array(Problem)
}) {
  override get message() {
    return `invalid ${this.what}: ${this.problems.map((p) => `${p.path || "(root)"}: ${p.reason}`).join("; ")}`
  }
}

export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", {
  entity: Schema.String,
  id: Schema.String
}) {
  override get message() {
    return `${this.entity} ${this.id} not found`
  }
}

/** No route maps this (connection, place) to a workspace. */
export class NoRoute extends Schema.TaggedError<NoRoute>()("NoRoute", {
  connection: Schema.String,
  place: Schema.String,
  /** A route for this place exists but is disabled. */
  disabled: Schema.optionalWith(Schema.Boolean, { default: () => false })
}) {
  override get message() {
    return `no enabled route for connection '${this.connection}' place '${this.place}'`
  }
}
