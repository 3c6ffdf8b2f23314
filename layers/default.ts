/** The default host: what `pynchy start` runs (SQLite file in the data dir, agents in bwrap or process sandboxes). */
import { Config, Effect, Layer } from "effect"
import * as ScriptedExecutor from "../src/pipeline/ScriptedExecutor.js"
import { HostConfig } from "../src/config/HostConfig.js"
import * as Database from "../src/db/Database.js"
import { DeployRollback } from "../src/host/DeployRollback.js"
import * as SandboxExecutor from "../src/sandbox/SandboxExecutor.js"
import { PluginRegistry } from "../src/plugins/PluginRegistry.js"
import { ConnectionRuntimeSources, type RuntimeEntry } from "../src/runtimes/ConnectionRuntimes.js"
import { AgentSessions } from "../src/runtimes/agent-session/AgentSessions.js"
import { AttachmentStore } from "../src/runtimes/agent-session/AttachmentStore.js"
import { layerFromEnv } from "../src/runtimes/agent-session/loader.js"
import { makeClient, makeStack } from "./stack.js"
import { BUILTINS } from "../src/builtins/list.js"

/** Deploys are git-managed: a start that fails while `<dataDir>/deploy.json` exists checks out the previous commit. */
const rollback = Layer.unwrapEffect(Effect.map(HostConfig, ({ dataDir }) => DeployRollback.layerGit(dataDir)))

/**
 * Turns run in sandboxes: bwrap where installed (else a plain process), the agent core chosen per
 * workspace. `PYNCHY_EXECUTOR=scripted` runs the deterministic in-process agent instead (offline
 * demos, and the crash drill, which tests the pipeline rather than the sandbox).
 */
const executor = Layer.unwrapEffect(
  Effect.map(Config.withDefault(Config.literal("sandbox", "scripted")("PYNCHY_EXECUTOR"), "sandbox"), (choice) =>
    choice === "scripted" ? ScriptedExecutor.layerConfig : SandboxExecutor.layer()
  )
)

/**
 * The host with the connection runtimes plugins contributed (plugin order, then contribution
 * order) followed by `extra` ones (the terminal chat adds its runtime this way).
 */
export const makeHostLive = (extra: ReadonlyArray<RuntimeEntry> = []) =>
  makeStack({
    config: HostConfig.layer,
    plugins: PluginRegistry.layerWith({ builtins: BUILTINS, refuseUndeclaredRoutes: true }),
    database: Database.layerHost,
    executor,
    runtimes: Layer.effect(
      ConnectionRuntimeSources,
      Effect.map(PluginRegistry, (r) => [...r.connectionRuntimes.map((c) => ({ plugin: c.plugin, value: c.value })), ...extra])
    ),
    // Runtimes named by PYNCHY_AGENT_SESSION_RUNTIME_MODULES; attachments in the host database.
    agentSessions: Layer.provideMerge(AgentSessions.layer, Layer.merge(AttachmentStore.layerDatabase, layerFromEnv)),
    rollback
  })

/** The database-side client of `pynchy send` and the MCP server. */
export const ClientLive = makeClient({ config: HostConfig.layer, database: Database.layer })
