import * as Migrator from "@effect/sql/Migrator"
import { Effect, Layer, Schema } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { HostConfig } from "../config/HostConfig.js"
import { migrations } from "./migrations.js"
import * as Sqlite from "./sqlite.js"

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

const prepared = (file: string) =>
  Layer.effectDiscard(
    migrate.pipe(Effect.mapError((e) => new DatabaseUnavailable({ file, reason: String(e.message ?? e) })))
  )

/** SQLite at `filename` (WAL, synchronous=NORMAL, foreign keys, busy_timeout), migrated. */
export const layerFile = (filename: string) =>
  Layer.provideMerge(
    prepared(filename),
    Layer.catchAll(Sqlite.layer(filename), (e) => Layer.fail(new DatabaseUnavailable({ file: filename, reason: e.message })))
  )

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
