/**
 * The settings of a `kind: telegram` connection in pynchy.yaml. Exactly one credential: the name
 * of an environment variable holding the bot token (`tokenEnv`), or a file with it (`tokenFile`,
 * relative to dataDir). The token itself never appears in the YAML.
 *
 * `mode: polling` (the default) reads updates with getUpdates; `mode: webhook` has Telegram POST
 * them to `webhook.url`, which a reverse proxy passes to `webhook.listen`. The webhook's secret
 * (Telegram sends it in `X-Telegram-Bot-Api-Secret-Token`) is named like the token: exactly one
 * of `webhook.secretTokenEnv` and `webhook.secretTokenFile`.
 */
import { Either, Schema } from "effect"
import { MAX_TEXT_CHARS } from "../../domain/message.js"
import { problemsOf } from "../../domain/problems.js"
import { type Credential, credentialOf } from "../token.js"

export const OFFICIAL_API_ROOT = "https://api.telegram.org"

const EnvName = Schema.String.pipe(Schema.pattern(/^[A-Z_][A-Z0-9_]*$/, { message: () => "must be an environment variable name" }))
const UrlPath = Schema.String.pipe(Schema.pattern(/^\/[\w./~-]*$/, { message: () => "must be a URL path starting with /" }))

export const TelegramWebhookSettings = Schema.Struct({
  /** The public URL Telegram POSTs updates to (https; http only with a local Bot API server as `apiRoot`). */
  url: Schema.String.pipe(Schema.pattern(/^https?:\/\/[^/\s?#]+(\/[^\s?#]*)?$/, { message: () => "must be an https:// URL without a query" })),
  /** Where this host listens for them, behind the reverse proxy that serves `url`. */
  listen: Schema.Struct({
    host: Schema.optionalWith(Schema.NonEmptyString, { default: () => "127.0.0.1" }),
    port: Schema.Int.pipe(Schema.between(1, 65_535))
  }),
  /** The path the listener answers on; default: the path of `url` (a proxy that keeps the path). */
  path: Schema.optional(UrlPath),
  secretTokenEnv: Schema.optional(EnvName),
  /** Relative to dataDir. */
  secretTokenFile: Schema.optional(Schema.NonEmptyString),
  /** A request body larger than this is refused (413); Telegram's updates are a few KiB. */
  maxBodyBytes: Schema.optionalWith(Schema.Int.pipe(Schema.between(1_024, 10_000_000)), { default: () => 1_048_576 })
})
export type TelegramWebhookSettings = typeof TelegramWebhookSettings.Type

export const TelegramSettings = Schema.Struct({
  kind: Schema.Literal("telegram"),
  tokenEnv: Schema.optional(EnvName),
  tokenFile: Schema.optional(Schema.NonEmptyString),
  /** The Bot API server (an emulator or a local Bot API server in tests). */
  apiRoot: Schema.optionalWith(Schema.String.pipe(Schema.pattern(/^https?:\/\/[^/]/, { message: () => "must be an http:// or https:// URL" })), {
    default: () => OFFICIAL_API_ROOT
  }),
  /** `polling`: getUpdates long polls (no public URL needed); `webhook`: Telegram POSTs to `webhook.url`. */
  mode: Schema.optionalWith(Schema.Literal("polling", "webhook"), { default: () => "polling" as const }),
  /** Required with `mode: webhook`; kept but unused in polling mode (switching back deletes the webhook). */
  webhook: Schema.optional(TelegramWebhookSettings),
  /** The getUpdates long-poll, in seconds. */
  pollTimeoutSeconds: Schema.optionalWith(Schema.Int.pipe(Schema.between(0, 50)), { default: () => 30 }),
  /** Upper bound of the retry backoff while the Bot API fails, in milliseconds. */
  maxBackoffMs: Schema.optionalWith(Schema.Int.pipe(Schema.between(10, 600_000)), { default: () => 5_000 }),
  /** An inbound text longer than this is refused (logged and skipped, never stored). */
  maxInboundChars: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, MAX_TEXT_CHARS)), { default: () => 16_384 })
})
export type TelegramSettings = typeof TelegramSettings.Type

const decode = Schema.decodeUnknownEither(TelegramSettings)
const CREDENTIALS = ["tokenEnv", "tokenFile"] as const
const SECRETS = ["secretTokenEnv", "secretTokenFile"] as const

/** The path the webhook listener answers on. */
export const webhookPath = (webhook: TelegramWebhookSettings): string => webhook.path ?? (new URL(webhook.url).pathname || "/")

/** Decodes one connection's settings; throws an Error naming every bad field path (values are cut off). */
export const decodeTelegramSettings = (name: string, input: unknown): TelegramSettings => {
  const decoded = decode(input, { errors: "all" })
  if (Either.isLeft(decoded)) {
    throw new Error(`connections.${name}: ${problemsOf(decoded.left).map((p) => `${p.path}: ${p.reason.replace(/,?\s*actual [\s\S]*$/, "")}`).join("; ")}`)
  }
  const s = decoded.right
  const given = CREDENTIALS.filter((k) => s[k] !== undefined)
  if (given.length !== 1) {
    throw new Error(`connections.${name}.${given.length === 0 ? "tokenEnv" : given.join("|")}: give exactly one of ${CREDENTIALS.join(", ")}`)
  }
  if (s.mode === "webhook" && s.webhook === undefined) {
    throw new Error(`connections.${name}.webhook: webhook mode needs webhook.url (the public https URL Telegram posts to), webhook.listen.port and a secret (webhook.secretTokenEnv or webhook.secretTokenFile)`)
  }
  if (s.webhook !== undefined) {
    const secrets = SECRETS.filter((k) => s.webhook![k] !== undefined)
    if (secrets.length !== 1) {
      throw new Error(`connections.${name}.webhook.${secrets.length === 0 ? "secretTokenEnv" : secrets.join("|")}: give exactly one of ${SECRETS.join(", ")} (Telegram sends the secret with every update; requests without it are refused)`)
    }
    if (s.webhook.url.startsWith("http://") && s.apiRoot === OFFICIAL_API_ROOT) {
      throw new Error(`connections.${name}.webhook.url: Telegram posts to https:// URLs only (http:// works with a local Bot API server as apiRoot)`)
    }
  }
  return s
}

/** The secrets a connection reads at start: its token, and the webhook's secret in webhook mode. */
export const telegramCredentials = (s: TelegramSettings): ReadonlyArray<Credential> => [
  credentialOf("", s),
  ...(s.mode === "webhook" && s.webhook !== undefined
    ? [{
      field: `webhook.${s.webhook.secretTokenEnv !== undefined ? "secretTokenEnv" : "secretTokenFile"}`,
      source: { tokenEnv: s.webhook.secretTokenEnv, tokenFile: s.webhook.secretTokenFile }
    }]
    : [])
]
