import { Effect, Layer, Redacted } from "effect"
import * as path from "node:path"
import * as Database from "../../src/db/Database.js"
import * as Stores from "../../src/db/Stores.js"
import { type ScratchPostgres, skipWithoutPostgres, startScratchPostgres } from "./postgres.js"
import { tempDir } from "./temp.js"

export { tempDir }

let scratch: ScratchPostgres | undefined
/** This test file's scratch Postgres cluster, started on first use; `stopPostgres` in afterAll. */
export const scratchPostgres = (): ScratchPostgres => (scratch ??= startScratchPostgres())
export const stopPostgres = () => {
  scratch?.stop()
  scratch = undefined
}

/** A fresh database on the file's scratch cluster, migrated. */
export const layerPostgres = () =>
  Layer.unwrapEffect(Effect.sync(() => Database.layerPostgres(Redacted.make(scratchPostgres().createDatabase()))))

/**
 * Every database implementation, for contract suites: SQLite memory and file, and Postgres on a
 * scratch cluster where PostgreSQL is installed (skipped with a message where not; a failure
 * under PYNCHY_REQUIRE_SYSTEM=1). Call `stopPostgres` in afterAll.
 */
export const databases = () => [
  { name: "memory", layer: () => Database.layerMemory },
  { name: "file", layer: () => Database.layerFile(path.join(tempDir(), "pynchy.db")) },
  ...(skipWithoutPostgres() ? [] : [{ name: "postgres", layer: layerPostgres }])
]

export const storesOn = (db: ReturnType<ReturnType<typeof databases>[number]["layer"]>) => Layer.provideMerge(Stores.layer, db)
