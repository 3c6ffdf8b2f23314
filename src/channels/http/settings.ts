/**
 * The settings of a `kind: http` connection: where the API listens (loopback only) and the
 * bearer tokens it accepts, stored as SHA-256 hex digests (inline or one per line in a file).
 */
import { Either, Schema } from "effect"
import { TokenHash } from "../../config/token-hashes.js"
import { problemLine, problemsOf } from "../../domain/problems.js"

export { hashToken } from "../../config/token-hashes.js"

export const HttpSettings = Schema.Struct({
  kind: Schema.Literal("http"),
  /** 0 picks a free port (tests). */
  port: Schema.Int.pipe(Schema.between(0, 65_535)),
  host: Schema.optionalWith(Schema.Literal("127.0.0.1", "::1", "localhost"), { default: () => "127.0.0.1" as const }),
  tokens: Schema.optionalWith(Schema.Array(TokenHash), { default: () => [] }),
  /** A file (relative to dataDir) with one SHA-256 hex digest per line. */
  tokensFile: Schema.optional(Schema.NonEmptyString),
  maxBodyBytes: Schema.optionalWith(Schema.Int.pipe(Schema.between(1_024, 10_000_000)), { default: () => 262_144 }),
  /**
   * The base of the URLs the API hands out (a spoken reply's audio): an `http(s)://` address, or
   * `tunnel` for the first present tunnel's URL. Unset: paths of this server.
   */
  publicUrl: Schema.optional(Schema.String.pipe(Schema.pattern(/^(tunnel|https?:\/\/\S+)$/, { message: () => "must be 'tunnel' or an http(s):// address" }))),
  /** The most replies one `replies` answer lists (the stream reads pages of this size). */
  keepReplies: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 100_000)), { default: () => 1_000 })
})
export type HttpSettings = typeof HttpSettings.Type

const decode = Schema.decodeUnknownEither(HttpSettings)

/** Decodes one connection's settings; throws an Error naming every bad field path. */
export const decodeHttpSettings = (name: string, input: unknown): HttpSettings => {
  const decoded = decode(input, { errors: "all" })
  if (Either.isLeft(decoded)) {
    throw new Error(problemsOf(decoded.left, ["connections", name]).map(problemLine).join("; "))
  }
  if (decoded.right.tokens.length === 0 && decoded.right.tokensFile === undefined) {
    throw new Error(`connections.${name}.tokens: give at least one token hash (tokens or tokensFile)`)
  }
  return decoded.right
}
