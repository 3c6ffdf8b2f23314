/**
 * The settings of a `kind: http` connection: where the API listens (loopback only), the bearer
 * tokens it accepts, stored as SHA-256 hex digests (inline, optionally with a name, or one per
 * line in a file), and the places every token may write to (`sharedPlaces`).
 */
import { Either, Schema } from "effect"
import type { ParseError } from "effect/ParseResult"
import { TokenHash } from "../../config/token-hashes.js"
import { Place } from "../../domain/place.js"
import { problemLine, problemsOf } from "../../domain/problems.js"

export { hashToken } from "../../config/token-hashes.js"

/** A token's name: its messages' sender. */
export const TokenName = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, { message: () => "must be 1-64 characters of letters, digits, '.', '_' or '-', starting with a letter or digit" })
)
const NamedToken = Schema.Struct({ hash: TokenHash, name: TokenName })

export const HttpSettings = Schema.Struct({
  kind: Schema.Literal("http"),
  /** 0 picks a free port (tests). */
  port: Schema.Int.pipe(Schema.between(0, 65_535)),
  host: Schema.optionalWith(Schema.Literal("127.0.0.1", "::1", "localhost"), { default: () => "127.0.0.1" as const }),
  /** A digest, or a digest with the token's name: the sender of every message posted with it. */
  tokens: Schema.optionalWith(Schema.Array(Schema.Union(TokenHash, NamedToken)), { default: () => [] }),
  /** Places any token may post to (each message's sender is its token's name); every other place belongs to the token that first wrote to it. */
  sharedPlaces: Schema.optionalWith(Schema.Array(Place), { default: () => [] }),
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

// The tokens are decoded one by one, each by the rules of its kind (a string is a digest, a
// mapping a named token): a union would report a bad digest twice, once as a mapping.
const decode = Schema.decodeUnknownEither(Schema.Struct({ ...HttpSettings.fields, tokens: Schema.optionalWith(Schema.Array(Schema.Unknown), { default: () => [] }) }))
const decodeDigest = Schema.decodeUnknownEither(TokenHash)
const decodeNamed = Schema.decodeUnknownEither(NamedToken, { onExcessProperty: "error" })

/** Decodes one connection's settings; throws an Error naming every bad field path. */
export const decodeHttpSettings = (name: string, input: unknown): HttpSettings => {
  const decoded = decode(input, { errors: "all" })
  const problems = Either.isLeft(decoded) ? problemsOf(decoded.left, ["connections", name]).map(problemLine) : []
  const raw = typeof input === "object" && input !== null ? (input as { readonly tokens?: unknown }).tokens : undefined
  const tokens: Array<HttpSettings["tokens"][number]> = []
  if (Array.isArray(raw)) {
    raw.forEach((t: unknown, i) => {
      const token: Either.Either<HttpSettings["tokens"][number], ParseError> = typeof t === "object" && t !== null && !Array.isArray(t) ? decodeNamed(t, { errors: "all" }) : decodeDigest(t)
      if (Either.isLeft(token)) problems.push(...problemsOf(token.left, ["connections", name, "tokens", i]).map(problemLine))
      else tokens.push(token.right)
    })
  }
  if (Either.isLeft(decoded) || problems.length > 0) throw new Error(problems.join("; "))
  const settings: HttpSettings = { ...decoded.right, tokens }
  if (settings.tokens.length === 0 && settings.tokensFile === undefined) {
    throw new Error(`connections.${name}.tokens: give at least one token hash (tokens or tokensFile)`)
  }
  const names = new Set<string>()
  settings.tokens.forEach((t, i) => {
    if (typeof t === "string") return
    if (names.has(t.name)) problems.push(`connections.${name}.tokens.${i}.name: another token is named '${t.name}'; each token's name is its own`)
    names.add(t.name)
  })
  if (problems.length > 0) throw new Error(problems.join("; "))
  return settings
}
