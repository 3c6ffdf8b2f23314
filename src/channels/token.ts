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
