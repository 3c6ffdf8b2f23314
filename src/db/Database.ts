import { SqlClient } from "@effect/sql"
import * as Migrator from "@effect/sql/Migrator"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { Effect, Layer, Schema } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { HostConfig } from "../config/HostConfig.js"
import { migrations } from "./migrations.js"

/** The database could not be opened or migrated. */
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

/** Pragmas the pipeline relies on: durable commits that do not wait for fsync of every page, FKs on. */
const configure = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe("PRAGMA busy_timeout = 5000")
  yield* sql.unsafe("PRAGMA synchronous = NORMAL")
  yield* sql.unsafe("PRAGMA foreign_keys = ON")
})

const prepared = (file: string) =>
  Layer.effectDiscard(
    Effect.gen(function* () {
      yield* configure
      yield* migrate
    }).pipe(Effect.mapError((e) => new DatabaseUnavailable({ file, reason: String(e.message ?? e) })))
  )

/** SQLite at `filename` (WAL), migrated. Provides SqlClient and SqliteClient. */
export const layerFile = (filename: string) => {
  const client = SqliteClient.layer({ filename }).pipe(Layer.orDie)
  return Layer.provideMerge(prepared(filename), client)
}

/** A fresh in-memory database, migrated: for tests and throwaway hosts. */
export const layerMemory = Layer.suspend(() => layerFile(":memory:"))

/** The host database: `<dataDir>/pynchy.db`, creating the data dir. */
export const layer = Layer.unwrapEffect(
  Effect.gen(function* () {
    const { dataDir, databaseFile } = yield* HostConfig
    yield* Effect.try({
      try: () => fs.mkdirSync(path.dirname(databaseFile), { recursive: true }),
      catch: (e) => new DatabaseUnavailable({ file: databaseFile, reason: `cannot create ${dataDir}: ${(e as Error).message}` })
    })
    return layerFile(databaseFile)
  })
)
