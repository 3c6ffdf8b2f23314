import { Config, Effect, Redacted } from "effect"
import * as fs from "node:fs/promises"
import * as path from "node:path"

/** Where a connection's bot token comes from: exactly one of the two (its settings schema checks that). */
export interface TokenSource {
  readonly tokenEnv?: string | undefined
  /** Relative to the data dir. */
  readonly tokenFile?: string | undefined
}

/**
 * A connection's bot token: from the environment variable `tokenEnv` (through Config, so it is
 * never in the YAML) or from `tokenFile`. A failure names the setting; `fail` makes it the
 * runtime's own error.
 */
export const readToken = <E>(name: string, source: TokenSource, dataDir: string, fail: (reason: string) => E): Effect.Effect<string, E> =>
  source.tokenEnv !== undefined
    ? Config.redacted(source.tokenEnv).pipe(
      Effect.map(Redacted.value),
      Effect.mapError(() => fail(`connections.${name}.tokenEnv: ${source.tokenEnv} is not set`))
    )
    : Effect.tryPromise({
      try: () => fs.readFile(path.resolve(dataDir, source.tokenFile!), "utf8"),
      catch: () => fail(`connections.${name}.tokenFile: cannot read the file`)
    }).pipe(Effect.map((s) => s.trim()))

/** A secret a connection reads at start: the settings field that names it, and where it is. */
export interface Credential {
  /** The settings field, e.g. `tokenEnv` or `webhook.secretTokenEnv`. */
  readonly field: string
  readonly source: TokenSource
}

/** The credential a TokenSource names, as the field that names it. */
export const credentialOf = (prefix: string, source: TokenSource): Credential => ({
  field: `${prefix}${source.tokenEnv !== undefined ? "tokenEnv" : "tokenFile"}`,
  source
})

/**
 * Why start could not read a connection's credential (`config check` asks before start does):
 * an unset or empty variable, or a file it cannot read; undefined when it is there.
 */
export const credentialProblem = (credential: Credential, dataDir: string): Effect.Effect<string | undefined> =>
  credential.source.tokenEnv !== undefined
    ? Config.option(Config.redacted(credential.source.tokenEnv)).pipe(
      Effect.map((v) => v._tag === "Some" && Redacted.value(v.value).trim() !== "" ? undefined : `environment variable ${credential.source.tokenEnv} is not set or empty (start reads the secret from it)`),
      Effect.orElseSucceed(() => `environment variable ${credential.source.tokenEnv} cannot be read`)
    )
    : Effect.promise(() => fs.access(path.resolve(dataDir, credential.source.tokenFile!)).then(() => undefined, () => `cannot read ${credential.source.tokenFile} (relative to the data dir)`))
