/** Helpers for the sandbox tests: a freshly built runner bundle, executor layers, probes. */
import { build } from "esbuild"
import { Effect, Layer } from "effect"
import { HostConfig } from "../../src/config/HostConfig.js"
import type { PynchyConfig } from "../../src/config/schema.js"
import { TurnStore } from "../../src/db/TurnStore.js"
import type { ConversationId } from "../../src/domain/ids.js"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { BUILTINS, type BuiltinPlugin } from "../../src/plugins/builtin.js"
import type { Gateway } from "../../src/gateway/Gateway.js"
import { PluginRegistry } from "../../src/plugins/PluginRegistry.js"
import * as SandboxExecutor from "../../src/sandbox/SandboxExecutor.js"
import { tempDir } from "../support/db.js"
import { eventually } from "../support/eventually.js"

let built: Promise<string> | undefined

/** Builds src/agent/runner.ts into a private temp file once per test file (no race with other files). */
export const runnerBundle = (): Promise<string> =>
  (built ??= (async () => {
    const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "pynchy-runner-")), "runner.mjs")
    await build({ entryPoints: ["src/agent/runner.ts"], outfile: out, bundle: true, platform: "node", target: "node20", format: "esm", logLevel: "warning" })
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
  const deps = Layer.merge(PluginRegistry.layerWith({ root: os.tmpdir(), builtins: [...BUILTINS, ...(extra.plugins ?? [])] }), extra.gateway ?? Layer.empty)
  return Layer.provide(SandboxExecutor.layer(options), deps).pipe(Layer.provide(HostConfig.layerFrom(config)), Layer.orDie)
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
