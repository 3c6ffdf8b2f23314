import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Layer, Option, Redacted, Schema } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { HostConfig } from "../config/HostConfig.js"
import { migrations } from "./migrations.js"
import * as SqliteClient from "./ImmediateSqliteClient.js"

/** The database could not be opened or migrated. `file` is the SQLite file, or the Postgres URL without its password. */
export class DatabaseUnavailable extends Schema.TaggedError<DatabaseUnavailable>()("DatabaseUnavailable", {
  file: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `database ${this.file}: ${this.reason}`
  }
}

const migrate = Migrator.make({})({
  loader: Migrator.fromRecord(migrations),
  table: "pynchy_migrations"
})

/** The advisory lock hosts take in turn to migrate one Postgres database ("pynm"). */
const MIGRATION_LOCK = 0x70796e6d

/**
 * On Postgres a host migrates while it holds MIGRATION_LOCK on a reserved connection: hosts
 * started at once on an empty database take turns (`CREATE TABLE IF NOT EXISTS` of the migrations
 * table is not safe against itself there, and the migrator's own table lock exists only once the
 * table does). The lock ends once the migration has, or with the session of a host that dies meanwhile.
 */
const migrateInTurn = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.onDialectOrElse({
    pg: () =>
      Effect.scoped(
        Effect.gen(function* () {
          const conn = yield* sql.reserve
          yield* conn.executeRaw(`SELECT pg_advisory_lock(${MIGRATION_LOCK})`, [])
          yield* Effect.addFinalizer(() => Effect.ignore(conn.executeRaw(`SELECT pg_advisory_unlock(${MIGRATION_LOCK})`, [])))
          return yield* migrate
        })
      ),
    orElse: () => migrate
  })
)

const prepared = (file: string) =>
  Layer.effectDiscard(
    migrateInTurn.pipe(Effect.mapError((e) => new DatabaseUnavailable({ file, reason: causeOf(e) })))
  )

/** How a process uses its database: a host checkpoints the WAL in the background, a one-shot client does not. */
export interface FileOptions {
  readonly backgroundCheckpoints?: boolean | undefined
}

/** SQLite at `filename` (WAL, synchronous=NORMAL, foreign keys, busy_timeout), migrated. */
export const layerFile = (filename: string, options: FileOptions = {}) =>
  Layer.provideMerge(
    prepared(filename),
    Layer.catchAll(SqliteClient.layer({ filename, backgroundCheckpoints: options.backgroundCheckpoints }), (e) => Layer.fail(new DatabaseUnavailable({ file: filename, reason: e.message })))
  )

/** A Postgres URL as it may be shown: without its password. */
export const shownUrl = (url: Redacted.Redacted): string => {
  try {
    const u = new URL(Redacted.value(url))
    if (u.password !== "") u.password = "***"
    return u.toString()
  } catch {
    return "postgres://(unparsable url)"
  }
}

/** Postgres at `url` (a pool of `maxConnections`), migrated: the same schema and stores as SQLite. */
export const layerPostgres = (url: Redacted.Redacted, options: { readonly maxConnections?: number | undefined } = {}) => {
  const shown = shownUrl(url)
  // Imported when used: pg costs ~150 ms to load, which a SQLite host never pays.
  const client = Layer.unwrapEffect(Effect.promise(() => import("./PostgresClient.js")).pipe(
    Effect.map((PostgresClient) => PostgresClient.layer({ url, maxConnections: options.maxConnections }))
  ))
  return Layer.provideMerge(
    prepared(shown),
    Layer.catchAll(client, (e) => Layer.fail(new DatabaseUnavailable({ file: shown, reason: causeOf(e) })))
  )
}

// The database's own message (connection refused, no such database, a statement's error) is in the
// cause; pg's never holds the password.
function causeOf(e: { readonly message: string; readonly cause?: unknown }) {
  const messages = [e.message]
  for (let c = e.cause, depth = 0; c instanceof Error && depth < 4; c = c.cause, depth++) {
    if (c.message !== "" && !messages.includes(c.message)) messages.push(c.message)
  }
  return messages.join(": ")
}

/** The configured database as it may be shown: the SQLite file, or the Postgres URL without its password. */
export const location = (config: { readonly databaseFile: string; readonly databaseUrl: Option.Option<Redacted.Redacted> }): string =>
  Option.match(config.databaseUrl, { onNone: () => config.databaseFile, onSome: shownUrl })

/** Whether the configured database may already hold a host's rows (a Postgres database is asked, not guessed). */
export const mayExist = (config: { readonly databaseFile: string; readonly databaseUrl: Option.Option<Redacted.Redacted> }): boolean =>
  Option.isSome(config.databaseUrl) || fs.existsSync(config.databaseFile)

/** The configured database without the data dir's care: SQLite file or Postgres. */
export const layerOf = (config: { readonly databaseFile: string; readonly databaseUrl: Option.Option<Redacted.Redacted>; readonly config: { readonly database: { readonly maxConnections: number } } }) =>
  Option.match(config.databaseUrl, {
    onNone: () => layerFile(config.databaseFile),
    onSome: (url) => layerPostgres(url, { maxConnections: config.config.database.maxConnections })
  })

/** A fresh in-memory database, migrated: for tests and throwaway hosts. */
export const layerMemory = Layer.suspend(() => layerFile(":memory:"))

/**
 * The data dir holds every conversation: it is created 0700, and a wider one that already holds
 * the database is tightened (a folder without the database may be someone else's: it is only
 * reported). Returns whether it was left wider than 0700.
 */
const privateDataDir = (dataDir: string, databaseFile: string): boolean => {
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 })
  const stat = fs.statSync(dataDir)
  if ((stat.mode & 0o077) === 0) return false
  if (!fs.existsSync(databaseFile) || stat.uid !== process.getuid?.()) return true
  fs.chmodSync(dataDir, 0o700)
  return false
}

/** The database and its WAL files are the owner's alone (0600), whatever the umask. */
const privateFiles = (databaseFile: string) =>
  Effect.sync(() => {
    for (const file of [databaseFile, `${databaseFile}-wal`, `${databaseFile}-shm`]) {
      try {
        fs.chmodSync(file, 0o600)
      } catch {
        // not there (yet): SQLite creates the WAL files with the database's mode
      }
    }
  })

/**
 * The configured database: Postgres when a URL is configured (`database.url`, `PYNCHY_DATABASE_URL`),
 * else `<dataDir>/pynchy.db`, creating the data dir (0700) and keeping its files 0600.
 */
const layerWith = (options: FileOptions) => Layer.unwrapEffect(
  Effect.gen(function* () {
    const { config, dataDir, databaseFile, databaseUrl } = yield* HostConfig
    const wide = yield* Effect.try({
      try: () => privateDataDir(path.dirname(databaseFile), databaseFile),
      catch: (e) => new DatabaseUnavailable({ file: databaseFile, reason: `cannot create ${dataDir}: ${(e as Error).message}` })
    })
    if (wide) yield* Effect.logWarning("the data dir is readable by other users (chmod 700 it)").pipe(Effect.annotateLogs({ dataDir }))
    // The data dir holds the gateway socket and workspaces whichever database holds the rows.
    if (Option.isSome(databaseUrl)) return layerPostgres(databaseUrl.value, { maxConnections: config.database.maxConnections })
    return Layer.tap(layerFile(databaseFile, options), () => privateFiles(databaseFile))
  })
)

/** The configured database for a one-shot client (`pynchy send`, `status`, the MCP server). */
export const layer = layerWith({})

/** The configured database for the host: on SQLite, WAL checkpoints run in a worker thread. */
export const layerHost = layerWith({ backgroundCheckpoints: true })
