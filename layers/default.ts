/** The default host: what `pynchy start` runs (SQLite file in the data dir, scripted agent until sandboxes land). */
import { HostConfig } from "../src/config/HostConfig.js"
import * as Database from "../src/db/Database.js"
import * as ScriptedExecutor from "../src/agent/ScriptedExecutor.js"
import { makeClient, makeStack } from "./stack.js"

export const HostLive = makeStack({
  config: HostConfig.layer,
  database: Database.layer,
  executor: ScriptedExecutor.layerConfig
})

/** The database-side client of `pynchy send` and the MCP server. */
export const ClientLive = makeClient({ config: HostConfig.layer, database: Database.layer })
