/**
 * The settings of a `kind: matrix` connection in pynchy.yaml. Exactly one credential: an access
 * token (inline or in a file) or a password (inline or in a file). Files are relative to dataDir.
 */
import { Either, Schema } from "effect"
import { problemsOf } from "../../domain/problems.js"

export const MatrixSettings = Schema.Struct({
  kind: Schema.Literal("matrix"),
  homeserver: Schema.String.pipe(Schema.pattern(/^https?:\/\/[^/]/, { message: () => "must be an http:// or https:// URL" })),
  userId: Schema.String.pipe(Schema.pattern(/^@[^:\s]+:\S+$/, { message: () => "must be a Matrix user id like @bot:example.org" })),
  accessToken: Schema.optional(Schema.NonEmptyString),
  accessTokenFile: Schema.optional(Schema.NonEmptyString),
  password: Schema.optional(Schema.NonEmptyString),
  passwordFile: Schema.optional(Schema.NonEmptyString),
  /** The device a password login reuses: Matrix transaction ids are scoped to it, so resends dedup across restarts. */
  deviceId: Schema.optional(Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9_.-]{1,64}$/, { message: () => "must be 1-64 letters, digits, _ . or -" }))),
  /** The /sync long-poll, in milliseconds. */
  syncTimeoutMs: Schema.optionalWith(Schema.Int.pipe(Schema.between(0, 120_000)), { default: () => 30_000 }),
  /** Upper bound of the retry backoff while the homeserver fails, in milliseconds. */
  maxBackoffMs: Schema.optionalWith(Schema.Int.pipe(Schema.between(10, 600_000)), { default: () => 5_000 })
})
export type MatrixSettings = typeof MatrixSettings.Type

const decode = Schema.decodeUnknownEither(MatrixSettings)
const CREDENTIALS = ["accessToken", "accessTokenFile", "password", "passwordFile"] as const

/** Decodes one connection's settings; throws an Error naming every bad field path (values are cut off: they may be secrets). */
export const decodeMatrixSettings = (name: string, input: unknown): MatrixSettings => {
  const decoded = decode(input, { errors: "all" })
  if (Either.isLeft(decoded)) {
    throw new Error(`connections.${name}: ${problemsOf(decoded.left).map((p) => `${p.path}: ${p.reason.replace(/,?\s*actual [\s\S]*$/, "")}`).join("; ")}`)
  }
  const given = CREDENTIALS.filter((k) => decoded.right[k] !== undefined)
  if (given.length !== 1) {
    throw new Error(`connections.${name}.${given.length === 0 ? "accessToken" : given.join("|")}: give exactly one of ${CREDENTIALS.join(", ")}`)
  }
  return decoded.right
}
