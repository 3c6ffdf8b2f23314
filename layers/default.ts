/** The default host: what `pynchy start` runs (SQLite file in the data dir, scripted agent until sandboxes land). */
import { Effect, Layer } from "effect"
import { HostConfig } from "../src/config/HostConfig.js"
import * as Database from "../src/db/Database.js"
import * as ScriptedExecutor from "../src/agent/ScriptedExecutor.js"
import { DeployRollback } from "../src/host/DeployRollback.js"
import { ConnectionRuntimeSources } from "../src/runtimes/ConnectionRuntimes.js"
import { makeClient, makeStack } from "./stack.js"

/** Deploys are git-managed: a start that fails while `<dataDir>/deploy.json` exists checks out the previous commit. */
const rollback = Layer.unwrapEffect(Effect.map(HostConfig, ({ dataDir }) => DeployRollback.layerGit(dataDir)))

export const HostLive = makeStack({
  config: HostConfig.layer,
  database: Database.layer,
  executor: ScriptedExecutor.layerConfig,
  runtimes: ConnectionRuntimeSources.none,
  rollback
})

/** The database-side client of `pynchy send` and the MCP server. */
export const ClientLive = makeClient({ config: HostConfig.layer, database: Database.layer })
