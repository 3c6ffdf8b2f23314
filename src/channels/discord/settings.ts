/**
 * The settings of a `kind: discord` connection in pynchy.yaml. Exactly one credential: the name
 * of an environment variable holding the bot token (`tokenEnv`), or a file with it (`tokenFile`,
 * relative to dataDir). The token itself never appears in the YAML.
 */
import { Either, Schema } from "effect"
import { MAX_TEXT_CHARS } from "../../domain/message.js"
import { problemsOf } from "../../domain/problems.js"
import { type Credential, credentialOf } from "../token.js"

export const DiscordSettings = Schema.Struct({
  kind: Schema.Literal("discord"),
  tokenEnv: Schema.optional(Schema.String.pipe(Schema.pattern(/^[A-Z_][A-Z0-9_]*$/, { message: () => "must be an environment variable name" }))),
  tokenFile: Schema.optional(Schema.NonEmptyString),
  /** The REST API base (the gateway URL comes from its `GET /gateway/bot`): a fake in tests. */
  apiRoot: Schema.optionalWith(Schema.String.pipe(Schema.pattern(/^https?:\/\/[^/]/, { message: () => "must be an http:// or https:// URL" })), {
    default: () => "https://discord.com/api"
  }),
  /**
   * The origins an attachment is downloaded from: Discord's CDN (its URLs are signed and need no
   * token); a fake in tests. An attachment URL anywhere else is refused and named to the agent.
   */
  fileOrigins: Schema.optionalWith(
    Schema.Array(Schema.String.pipe(Schema.pattern(/^https?:\/\/[^/?#]+$/, { message: () => "must be an origin like https://cdn.discordapp.com (no path)" }))),
    { default: () => ["https://cdn.discordapp.com", "https://media.discordapp.net"] }
  ),
  /** An inbound text longer than this is refused (logged and skipped, never stored). */
  maxInboundChars: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, MAX_TEXT_CHARS)), { default: () => 16_384 }),
  /** After an outage, at most this many pages of 100 messages are read back per channel. */
  catchUpPages: Schema.optionalWith(Schema.Int.pipe(Schema.between(0, 100)), { default: () => 10 })
})
export type DiscordSettings = typeof DiscordSettings.Type

const decode = Schema.decodeUnknownEither(DiscordSettings)
const CREDENTIALS = ["tokenEnv", "tokenFile"] as const

/** Decodes one connection's settings; throws an Error naming every bad field path (values are cut off). */
export const decodeDiscordSettings = (name: string, input: unknown): DiscordSettings => {
  const decoded = decode(input, { errors: "all" })
  if (Either.isLeft(decoded)) {
    throw new Error(`connections.${name}: ${problemsOf(decoded.left).map((p) => `${p.path}: ${p.reason.replace(/,?\s*actual [\s\S]*$/, "")}`).join("; ")}`)
  }
  const given = CREDENTIALS.filter((k) => decoded.right[k] !== undefined)
  if (given.length !== 1) {
    throw new Error(`connections.${name}.${given.length === 0 ? "tokenEnv" : given.join("|")}: give exactly one of ${CREDENTIALS.join(", ")}`)
  }
  return decoded.right
}

/** The secret a connection reads at start: its bot token. */
export const discordCredentials = (s: DiscordSettings): ReadonlyArray<Credential> => [credentialOf("", s)]
