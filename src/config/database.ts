/**
 * The `database:` section. Absent (and no `PYNCHY_DATABASE_URL`): the SQLite file
 * `<dataDir>/pynchy.db`. A `url` selects Postgres (docs/deploy.md).
 */
import { Schema } from "effect"

/** A `postgres://` or `postgresql://` connection URL. It may hold a password: never echoed in an error. */
export const PostgresUrl = Schema.String.pipe(
  Schema.filter((s) => /^postgres(ql)?:\/\/\S+$/.test(s) || "a postgres:// or postgresql:// URL (the value is not shown: it may hold a password)")
)

export class DatabaseConfig extends Schema.Class<DatabaseConfig>("DatabaseConfig")({
  url: Schema.optional(PostgresUrl),
  /** Connections in the Postgres pool. */
  maxConnections: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 1_000)), { default: () => 10 })
}) {}
