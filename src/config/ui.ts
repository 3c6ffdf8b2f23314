/**
 * The `ui:` section: the Control UI (docs/control-ui.md). Absent means off. It listens on a
 * loopback address only and admits whoever presents a token whose SHA-256 digest is listed here
 * (the HTTP channel's scheme, src/config/token-hashes.ts).
 */
import { Schema } from "effect"
import { TokenHash } from "./token-hashes.js"

/** The connection name of the UI's chat: route its conversations with `{ connection: ui, ... }`. */
export const UI_CONNECTION = "ui"

export class UiLoginLimits extends Schema.Class<UiLoginLimits>("UiLoginLimits")({
  perClient: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 1_000)), { default: () => 5 }),
  overall: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 100_000)), { default: () => 50 })
}) {}

export class UiConfig extends Schema.Class<UiConfig>("UiConfig")({
  /** 0 picks a free port (tests). */
  port: Schema.Int.pipe(Schema.between(0, 65_535)),
  host: Schema.optionalWith(Schema.Literal("127.0.0.1", "::1", "localhost"), { default: () => "127.0.0.1" as const }),
  tokens: Schema.optionalWith(Schema.Array(TokenHash), { default: () => [] }),
  /** A file (relative to dataDir) with one SHA-256 hex digest per line. */
  tokensFile: Schema.optional(Schema.NonEmptyString),
  /**
   * The link the host prints for the UI (at start): an `http(s)://` address, or `tunnel` for the
   * first present tunnel's URL. Unset: the local address.
   */
  publicUrl: Schema.optional(Schema.String.pipe(Schema.pattern(/^(tunnel|https?:\/\/\S+)$/, { message: () => "must be 'tunnel' or an http(s):// address" }))),
  /** How long a login lasts without use, in minutes. */
  sessionMinutes: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 10_080)), { default: () => 720 }),
  /** Failed logins allowed per minute, from one client (remote address) and from all together; past either, 429 with the wait. */
  loginLimits: Schema.optionalWith(UiLoginLimits, { default: () => UiLoginLimits.make({}) })
}) {}
