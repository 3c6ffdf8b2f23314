import { Layer } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Database from "../../src/db/Database.js"
import * as Stores from "../../src/db/Stores.js"

export const tempDir = (prefix = "pynchy-test-") => fs.mkdtempSync(path.join(os.tmpdir(), prefix))

/** Both database implementations, for contract suites. */
export const databases = [
  { name: "memory", layer: () => Database.layerMemory },
  { name: "file", layer: () => Database.layerFile(path.join(tempDir(), "pynchy.db")) }
] as const

export const storesOn = (db: ReturnType<(typeof databases)[number]["layer"]>) => Layer.provideMerge(Stores.layer, db)
