/** The default host: what `pynchy start` runs (SQLite file in the data dir, scripted agent until sandboxes land). */
import { Effect, Layer } from "effect"
import { HostConfig } from "../src/config/HostConfig.js"
import * as Database from "../src/db/Database.js"
import * as ScriptedExecutor from "../src/agent/ScriptedExecutor.js"
import { DeployRollback } from "../src/host/DeployRollback.js"
import { PluginRegistry } from "../src/plugins/PluginRegistry.js"
import { ConnectionRuntimeSources } from "../src/runtimes/ConnectionRuntimes.js"
import { makeClient, makeStack } from "./stack.js"

/** Deploys are git-managed: a start that fails while `<dataDir>/deploy.json` exists checks out the previous commit. */
const rollback = Layer.unwrapEffect(Effect.map(HostConfig, ({ dataDir }) => DeployRollback.layerGit(dataDir)))

/** The connection runtimes plugins contributed, in plugin order then contribution order. */
export const pluginRuntimes = Layer.effect(
  ConnectionRuntimeSources,
  Effect.map(PluginRegistry, (r) => r.connectionRuntimes.map((c) => ({ plugin: c.plugin, value: c.value })))
)

export const HostLive = makeStack({
  config: HostConfig.layer,
  plugins: PluginRegistry.layer,
  database: Database.layer,
  executor: ScriptedExecutor.layerConfig,
  runtimes: pluginRuntimes,
  rollback
})

/** The database-side client of `pynchy send` and the MCP server. */
export const ClientLive = makeClient({ config: HostConfig.layer, database: Database.layer })
