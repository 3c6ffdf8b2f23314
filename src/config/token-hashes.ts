/**
 * Login tokens stored as SHA-256 hex digests, inline (`tokens`) or one per line in a file
 * (`tokensFile`, relative to the data dir): the scheme of the HTTP channel and the Control UI.
 * A token itself is never stored; a presented token is hashed and compared with every digest.
 */
import { Effect, Option, Schema } from "effect"
import { createHash, timingSafeEqual } from "node:crypto"
import * as fs from "node:fs/promises"
import * as path from "node:path"

export const TokenHash = Schema.String.pipe(Schema.pattern(/^[0-9a-f]{64}$/, { message: () => "must be the SHA-256 hex digest of a token (64 lowercase hex digits)" }))

/** What goes into `tokens:` for a token: `node -e 'console.log(require("crypto").createHash("sha256").update(TOKEN).digest("hex"))'`. */
export const hashToken = (token: string): string => createHash("sha256").update(token, "utf8").digest("hex")

/** Parses a tokens file: one digest per line; blank lines and `#` comments are ignored. `at` is the setting's path (`ui.tokensFile`). */
export const parseTokensFile = (at: string, content: string): Array<string> =>
  content.split("\n").map((l) => l.trim()).filter((l) => l !== "" && !l.startsWith("#")).map((l, i) => {
    if (!/^[0-9a-f]{64}$/.test(l)) throw new Error(`${at}: entry ${i + 1} is not a SHA-256 hex digest`)
    return l
  })

/** The configured digests could not be read; `message` names the setting (`<at>: ...`). */
export class TokensUnreadable extends Schema.TaggedError<TokensUnreadable>()("TokensUnreadable", {
  at: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `${this.at}: ${this.reason}`
  }
}

/** The inline digests plus those of the tokens file (read now). `at` is the settings' path (`ui`, `connections.web`). */
export const readTokenHashes = (
  at: string,
  settings: { readonly tokens: ReadonlyArray<string>; readonly tokensFile?: string | undefined },
  dataDir: string
): Effect.Effect<ReadonlyArray<string>, TokensUnreadable> =>
  Effect.gen(function* () {
    const file = settings.tokensFile
    if (file === undefined) return settings.tokens
    const content = yield* Effect.tryPromise({
      try: () => fs.readFile(path.resolve(dataDir, file), "utf8"),
      catch: () => new TokensUnreadable({ at: `${at}.tokensFile`, reason: "cannot read the file" })
    })
    const fromFile = yield* Effect.try({
      try: () => parseTokensFile(`${at}.tokensFile`, content),
      catch: (e) => new TokensUnreadable({ at: `${at}.tokensFile`, reason: (e as Error).message.replace(/^[^:]*: /, "") })
    })
    return [...settings.tokens, ...fromFile]
  })

/**
 * The configured digest a presented token matches, or none. Every digest is compared, so the time
 * taken does not say which one matched.
 */
export const tokenMatcher = (hashes: ReadonlyArray<string>) => {
  const digests = hashes.map((h) => Buffer.from(h, "hex"))
  return (token: string): Option.Option<string> => {
    const digest = Buffer.from(hashToken(token), "hex")
    let match: Buffer | undefined
    for (const h of digests) if (timingSafeEqual(h, digest)) match = h
    return Option.map(Option.fromNullable(match), (m) => m.toString("hex"))
  }
}
