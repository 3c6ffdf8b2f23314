/** Helpers for the sandbox tests: a freshly built runner bundle, executor layers, probes. */
import { EventBus } from "../../src/events/EventBus.js"
import { build } from "esbuild"
import { Effect, Layer } from "effect"
import { HostConfig } from "../../src/config/HostConfig.js"
import type { PynchyConfig } from "../../src/config/schema.js"
import { TurnStore } from "../../src/db/TurnStore.js"
import type { ConversationId } from "../../src/domain/ids.js"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { BUILTINS, type BuiltinPlugin } from "../../src/builtins/list.js"
import { AgentTasks } from "../../src/schedules/AgentTasks.js"
import { Approvals } from "../../src/actions/Approvals.js"
import { HostActions } from "../../src/actions/HostActions.js"
import { GatewayConfig } from "../../src/config/gateway.js"
import { Gateway, GatewaySettings } from "../../src/gateway/Gateway.js"
import { McpHost } from "../../src/mcp/McpHost.js"
import { ConversationContext } from "../../src/pipeline/ConversationContext.js"
import { PluginRegistry } from "../../src/plugins/PluginRegistry.js"
import * as SandboxExecutor from "../../src/sandbox/SandboxExecutor.js"
import { tempDir } from "../support/db.js"
import { eventually } from "../support/eventually.js"

let built: Promise<string> | undefined

/** Builds src/agent/runner.ts into a private temp file once per test file (no race with other files). */
export const runnerBundle = (): Promise<string> =>
  (built ??= (async () => {
    const out = path.join(tempDir("pynchy-runner-"), "runner.mjs")
    await build({ entryPoints: ["src/agent/runner.ts"], outfile: out, bundle: true, platform: "node", target: "node20", format: "esm", logLevel: "warning", banner: { js: "import { createRequire as __pynchyRequire } from 'node:module'; const require = __pynchyRequire(import.meta.url);" } })
    return out
  })())

/**
 * The sandbox executor over the built-in plugins (plus `extra`), with an optional gateway, as
 * the closed layer `makeTestHost` takes (its own HostConfig from the same config).
 */
export const sandboxExecutor = (
  config: PynchyConfig,
  options: SandboxExecutor.SandboxExecutor.Options,
  extra: { readonly plugins?: ReadonlyArray<BuiltinPlugin>; readonly gateway?: Layer.Layer<Gateway, unknown> } = {}
) => {
  const deps = Layer.merge(registryOf(extra.plugins), extra.gateway ?? Layer.empty)
  return Layer.provide(SandboxExecutor.layer(options), deps).pipe(Layer.provide(HostConfig.layerFrom(config)), Layer.orDie)
}

const registryOf = (plugins: ReadonlyArray<BuiltinPlugin> = []) => PluginRegistry.layerWith({ root: os.tmpdir(), builtins: [...BUILTINS, ...plugins] })

/**
 * The sandbox executor with no host around it: no conversation memory, a gateway without
 * providers (no model, no token), the plugins' host actions with no one to ask for approval.
 */
export const bareSandboxExecutor = (config: PynchyConfig, options: SandboxExecutor.SandboxExecutor.Options, plugins: ReadonlyArray<BuiltinPlugin> = []) => {
  const registry = registryOf(plugins)
  const host = Layer.mergeAll(
    ConversationContext.layerNone,
    Layer.provide(HostActions.layer, Layer.merge(Approvals.layerNone, AgentTasks.layerNone)),
    Layer.provide(Gateway.layer, GatewaySettings.layerFrom({ dataDir: config.dataDir, providers: [], gateway: GatewayConfig.make({}) })),
    EventBus.layer
  ).pipe(Layer.provideMerge(McpHost.layer), Layer.provideMerge(registry))
  return Layer.provide(SandboxExecutor.layer(options), host).pipe(Layer.provide(HostConfig.layerFrom(config)), Layer.orDie)
}

/** Writes a probe script (plain ESM) to a temp file and returns its path. */
export const probeScript = (source: string): string => {
  const file = path.join(tempDir("pynchy-probe-"), "probe.mjs")
  fs.writeFileSync(file, source)
  return file
}

/** Waits until the conversation's latest turn is completed or failed, and returns it. */
export const awaitTurnEnd = (conversationId: ConversationId) =>
  Effect.flatMap(TurnStore, (turns) =>
    eventually(
      Effect.map(turns.recent(conversationId, 1), ([turn]) => (turn !== undefined && (turn.status === "completed" || turn.status === "failed") ? turn : undefined)),
      { label: `the end of the latest turn of ${conversationId}` }
    ))
