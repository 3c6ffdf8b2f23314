import { Config, Context, Effect, Layer, Option } from "effect"
import type { Duration } from "effect"
import * as path from "node:path"
import { ConfigInvalid, HostConfig } from "../config/HostConfig.js"
import type { BuiltinPlugin } from "./discovery.js"
import { routeProblems, undeclaredRouteProblems } from "./connections.js"
import { discover, type ModuleRequest } from "./discovery.js"
import { PluginContributionsInvalid } from "./errors.js"
import { hostPackageRoot } from "./paths.js"
import { collect, contextFor, DEFAULT_HOOK_TIMEOUT, type Registry } from "./registry.js"

export declare namespace PluginRegistry {
  /**
   * Every plugin contribution, validated at startup: typed lists per category (each item names
   * its plugin and source), the discovered plugins, and those skipped with the reason.
   */
  export type Service = Registry

  export interface Options {
    /** The project whose node_modules is scanned; default: the host's package folder. */
    readonly root?: string
    /** The built-in plugins (the host's: src/builtins/list.ts; they sit above this registry). */
    readonly builtins: ReadonlyArray<BuiltinPlugin>
    /** The deadline of one hook call or module import; default 10 s. */
    readonly hookTimeout?: Duration.DurationInput
    /**
     * Refuse routes to connections not declared and served by no plugin: set by a host whose
     * connections all come from plugins (the default host); a custom host may bring its own channels.
     */
    readonly refuseUndeclaredRoutes?: boolean
  }
}

/** `PYNCHY_PLUGINS`: extra module specifiers, separated by commas or newlines. */
const envModules = Config.string("PYNCHY_PLUGINS").pipe(
  Config.withDefault(""),
  Config.map((s) => s.split(/[,\n]/).map((x) => x.trim()).filter((x) => x !== ""))
)

/**
 * Discovery + validation without failing: the registry and every fault. `make` fails on any
 * fault; `pynchy plugins` shows them.
 */
const inspect = Effect.fn("PluginRegistry.inspect")(
  function* (options: PluginRegistry.Options) {
    const host = yield* HostConfig
    const fromEnv = yield* envModules
    // Config paths are relative to the config file's folder; env paths to the working directory.
    const configBase = Option.match(host.file, { onNone: () => process.cwd(), onSome: (f) => path.dirname(f) })
    const modules: Array<ModuleRequest> = [
      ...host.config.plugins.modules.map((specifier) => ({ specifier, base: configBase })),
      ...fromEnv.map((specifier) => ({ specifier, base: process.cwd() }))
    ]
    const timeout = options.hookTimeout ?? DEFAULT_HOOK_TIMEOUT
    const discovered = yield* discover({
      root: options.root ?? hostPackageRoot(),
      builtins: options.builtins,
      modules,
      disabled: host.config.plugins.disabled,
      loadTimeout: timeout
    })
    const { faults, registry } = yield* collect(discovered.candidates, {
      context: contextFor(host.config),
      hookTimeout: timeout,
      skipped: discovered.skipped
    })
    return { registry, faults: [...discovered.faults, ...faults] }
  }
)

export class PluginRegistry extends Context.Tag("pynchy/PluginRegistry")<PluginRegistry, PluginRegistry.Service>() {
  static readonly inspect = inspect

  /** Discovers and validates; fails with every fault, logs each skipped plugin with its reason. */
  static readonly make = (options: PluginRegistry.Options) =>
    Effect.gen(function* () {
      const { faults, registry } = yield* inspect(options)
      for (const s of registry.skipped) {
        yield* Effect.logInfo("plugin skipped").pipe(
          Effect.annotateLogs({ plugin: s.name, reason: s.reason, ...(s.hint !== undefined ? { hint: s.hint } : {}) })
        )
      }
      if (faults.length > 0) return yield* new PluginContributionsInvalid({ faults })
      const host = yield* HostConfig
      const unserved = [
        ...routeProblems(host.config, registry),
        ...(options.refuseUndeclaredRoutes === true ? undeclaredRouteProblems(host.config, registry) : [])
      ]
      if (unserved.length > 0) {
        return yield* new ConfigInvalid({ file: Option.getOrElse(host.file, () => "(embedded defaults)"), problems: unserved })
      }
      yield* Effect.logInfo("plugins loaded").pipe(Effect.annotateLogs({ plugins: registry.plugins.map((p) => p.name).join(",") }))
      return registry
    })


  static readonly layerWith = (options: PluginRegistry.Options) => Layer.effect(PluginRegistry, PluginRegistry.make(options))
}
