/**
 * The settings of a `kind: slack` connection in pynchy.yaml. Secrets are named, never written:
 * `botTokenEnv` (the xoxb- bot token) always; `appTokenEnv` (the xapp- app-level token) for
 * Socket Mode (the default); `signingSecretEnv` for HTTP events mode. Each is the name of an
 * environment variable, read through Effect Config when the connection starts.
 */
import { Either, Schema } from "effect"
import { MAX_TEXT_CHARS } from "../../domain/message.js"
import { problemsOf } from "../../domain/problems.js"
import type { Credential } from "../token.js"

const EnvName = Schema.String.pipe(Schema.pattern(/^[A-Z_][A-Z0-9_]*$/, { message: () => "must be an environment variable name" }))

export const SlackSettings = Schema.Struct({
  kind: Schema.Literal("slack"),
  /** `socket`: Socket Mode (an outbound WebSocket, no public URL); `http`: Slack POSTs signed events to `port`/`path`. */
  mode: Schema.optionalWith(Schema.Literal("socket", "http"), { default: () => "socket" as const }),
  botTokenEnv: EnvName,
  appTokenEnv: Schema.optional(EnvName),
  signingSecretEnv: Schema.optional(EnvName),
  /** HTTP mode: where the events endpoint listens (put a TLS proxy or tunnel in front of it). */
  host: Schema.optionalWith(Schema.String, { default: () => "127.0.0.1" }),
  port: Schema.optional(Schema.Int.pipe(Schema.between(1, 65_535))),
  path: Schema.optionalWith(Schema.String.pipe(Schema.pattern(/^\/[\w./-]*$/, { message: () => "must be a URL path starting with /" })), {
    default: () => "/slack/events"
  }),
  /** The Web API base (a fake one in tests). */
  apiUrl: Schema.optionalWith(Schema.String.pipe(Schema.pattern(/^https?:\/\/[^/]/, { message: () => "must be an http:// or https:// URL" })), {
    default: () => "https://slack.com/api/"
  }),
  /** Upper bound of the reconnect backoff while Slack cannot be reached, in milliseconds. */
  maxBackoffMs: Schema.optionalWith(Schema.Int.pipe(Schema.between(10, 600_000)), { default: () => 30_000 }),
  /** After an outage, at most this many pages of 100 messages are read per place (0: no catch-up). */
  catchUpPages: Schema.optionalWith(Schema.Int.pipe(Schema.between(0, 100)), { default: () => 10 }),
  /** An inbound text longer than this is refused (logged and skipped, never stored). */
  maxInboundChars: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, MAX_TEXT_CHARS)), { default: () => 16_384 })
})
export type SlackSettings = typeof SlackSettings.Type

const decode = Schema.decodeUnknownEither(SlackSettings)

/** Decodes one connection's settings; throws an Error naming every bad field path (values are cut off). */
export const decodeSlackSettings = (name: string, input: unknown): SlackSettings => {
  const decoded = decode(input, { errors: "all" })
  if (Either.isLeft(decoded)) {
    throw new Error(`connections.${name}: ${problemsOf(decoded.left).map((p) => `${p.path}: ${p.reason.replace(/,?\s*actual [\s\S]*$/, "")}`).join("; ")}`)
  }
  const s = decoded.right
  if (s.mode === "socket" && s.appTokenEnv === undefined) {
    throw new Error(`connections.${name}.appTokenEnv: Socket Mode needs the app-level token (xapp-...): name its environment variable`)
  }
  if (s.mode === "http" && s.signingSecretEnv === undefined) {
    throw new Error(`connections.${name}.signingSecretEnv: HTTP mode verifies every request with the app's signing secret: name its environment variable`)
  }
  if (s.mode === "http" && s.port === undefined) {
    throw new Error(`connections.${name}.port: HTTP mode needs the port its events endpoint listens on`)
  }
  return s
}

/** The secrets a connection reads at start: the bot token, and the app token (Socket Mode) or the signing secret (HTTP mode). */
export const slackCredentials = (s: SlackSettings): ReadonlyArray<Credential> => [
  { field: "botTokenEnv", source: { tokenEnv: s.botTokenEnv } },
  s.mode === "socket"
    ? { field: "appTokenEnv", source: { tokenEnv: s.appTokenEnv } }
    : { field: "signingSecretEnv", source: { tokenEnv: s.signingSecretEnv } }
]
