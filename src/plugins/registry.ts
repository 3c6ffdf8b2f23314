/**
 * Validation of a plugin set: every hook of every plugin is called, every contribution decoded,
 * names checked for uniqueness per category; the result is the registry or every fault found.
 */
import { Duration, Effect, Either, Option } from "effect"
import { PynchyConfig } from "../config/schema.js"
import type { Channel } from "../contracts/channel.js"
import type { AnyConnectionRuntime } from "../contracts/native-runtime.js"
import { invoke } from "../contracts/call-hook.js"
import { CATEGORIES, type Checked, type ContributionTypes, type SkillFolder, UNSUPPORTED_HOOKS } from "./contributions.js"
import { HOOKS, type HookName, type PluginContext } from "../contracts/plugin.js"
import { PluginContributionsInvalid, PluginFault, type PluginSource, type SkippedPlugin } from "./errors.js"

/** A loaded plugin module's export and where it came from. */
export interface Candidate {
  readonly plugin: unknown
  readonly source: PluginSource
}

/** One accepted contribution, with the plugin it came from. */
export interface Contribution<A> {
  readonly name: string
  readonly plugin: string
  readonly source: PluginSource
  readonly value: A
}

/** What `pynchy plugins` shows of a plugin: its names per hook. */
export interface LoadedPlugin {
  readonly name: string
  readonly version?: string
  readonly description?: string
  readonly source: PluginSource
  readonly contributions: Partial<Record<HookName, ReadonlyArray<string>>>
}

export type ByHook = { readonly [K in HookName]: ReadonlyArray<Contribution<ContributionTypes[K]>> }

/** The validated plugin set. Each list is in registration order (built-ins, packages, modules). */
export interface Registry {
  readonly plugins: ReadonlyArray<LoadedPlugin>
  readonly skipped: ReadonlyArray<SkippedPlugin>
  readonly byHook: ByHook
  readonly agentCores: ByHook["agentCore"]
  readonly serviceHandlers: ByHook["serviceHandler"]
  readonly actionSpecs: ByHook["actionSpecs"]
  readonly skills: ReadonlyArray<Contribution<SkillFolder>>
  readonly channels: ReadonlyArray<Contribution<Channel>>
  /** Started in this order, closed in reverse. */
  readonly connectionRuntimes: ReadonlyArray<Contribution<AnyConnectionRuntime>>
  readonly speechSynthesizers: ByHook["speechSynthesizer"]
  readonly containerRuntimes: ByHook["containerRuntime"]
  readonly tunnels: ByHook["tunnel"]
  readonly observers: ByHook["observer"]
  readonly mcpServers: ByHook["mcpServerSpec"]
  readonly workspaces: ByHook["workspaceSpec"]
  /** The contribution of that name in that category. */
  readonly find: <K extends HookName>(hook: K, name: string) => Option.Option<Contribution<ContributionTypes[K]>>
}

export interface BuildOptions {
  /** What hooks receive; defaults to the embedded default config. */
  readonly context?: PluginContext
  /** The deadline of each hook call (default 10 s). */
  readonly hookTimeout?: Duration.DurationInput
  /** Plugins discovery skipped, carried into the registry for reporting. */
  readonly skipped?: ReadonlyArray<SkippedPlugin>
}

export const DEFAULT_HOOK_TIMEOUT = Duration.seconds(10)

export const contextFor = (config: PynchyConfig): PluginContext => ({
  config,
  connectionConfig: (name) => (config.connections as Record<string, Record<string, unknown> | undefined>)[name]
})

let cachedDefault: PluginContext | undefined
const defaultContext = () => (cachedDefault ??= contextFor(PynchyConfig.make({})))

const META_KEYS = new Set(["name", "version", "description"])
const HOOK_SET: ReadonlySet<string> = new Set(HOOKS)

/** The name a plugin is reported under before its own name is known. */
export const fallbackName = (source: PluginSource): string =>
  source._tag === "package" ? source.name : source._tag === "module" ? source.specifier : "(builtin)"

interface Shaped {
  readonly name: string
  readonly version?: string
  readonly description?: string
  readonly hooks: ReadonlyArray<readonly [HookName, (context: PluginContext) => unknown]>
}

/**
 * The plugin object itself: a name, optional version/description, hooks that are functions,
 * nothing else. Without an object or a name nothing can be attributed, so its hooks are not
 * called; other shape faults are reported and the valid hooks still run (every fault at once).
 */
const shape = (candidate: Candidate): { readonly plugin?: Shaped; readonly faults: ReadonlyArray<PluginFault> } => {
  const p = candidate.plugin
  const fallback = fallbackName(candidate.source)
  const fault = (plugin: string, hook: string, problem: string) => PluginFault.make({ plugin, hook, code: "invalid_plugin", problem })
  if (p === null || typeof p !== "object" || Array.isArray(p)) {
    return { faults: [fault(fallback, "plugin", "the module does not export a plugin object (export default definePlugin({...}))")] }
  }
  const record = p as Record<string, unknown>
  if (typeof record.name !== "string" || record.name.trim() === "") {
    return { faults: [fault(fallback, "plugin", "name: a plugin needs a non-empty string name")] }
  }
  const name = record.name.trim()
  const faults: Array<PluginFault> = []
  for (const key of ["version", "description"]) {
    if (record[key] !== undefined && typeof record[key] !== "string") faults.push(fault(name, "plugin", `${key}: must be a string`))
  }
  const hooks: Array<readonly [HookName, (context: PluginContext) => unknown]> = []
  for (const key of Object.keys(record)) {
    if (META_KEYS.has(key)) continue
    if (!HOOK_SET.has(key)) {
      faults.push(fault(name, "plugin", `unknown key '${key}' (hooks: ${HOOKS.join(", ")})`))
    } else if (typeof record[key] !== "function") {
      faults.push(fault(name, key, "the hook must be a function"))
    } else {
      const fn = record[key] as (context: PluginContext) => unknown
      hooks.push([key as HookName, (context) => fn.call(p, context)])
    }
  }
  hooks.sort((a, b) => HOOKS.indexOf(a[0]) - HOOKS.indexOf(b[0]))
  return {
    faults,
    plugin: {
      name,
      hooks,
      ...(typeof record.version === "string" ? { version: record.version } : {}),
      ...(typeof record.description === "string" ? { description: record.description } : {})
    }
  }
}

const itemLabel = (item: unknown, index: number): string => {
  const r = item !== null && typeof item === "object" ? (item as Record<string, unknown>) : {}
  const name = typeof r.name === "string" ? r.name : typeof r.id === "string" ? r.id : undefined
  return name !== undefined ? `item ${index} '${name}'` : `item ${index}`
}

interface Accepted {
  readonly hook: HookName
  readonly name: string
  readonly value: unknown
}

/** Calls one plugin's hooks (in hook order) and checks what they return. */
const runPlugin = (plugin: Shaped, context: PluginContext, timeout: Duration.DurationInput) =>
  Effect.forEach(plugin.hooks, ([hook, call]) =>
    invoke(() => call(context), timeout).pipe(
      Effect.map((result) => {
        const items: ReadonlyArray<unknown> = result === null || result === undefined ? [] : Array.isArray(result) ? result : [result]
        const accepted: Array<Accepted> = []
        const faults: Array<PluginFault> = []
        items.forEach((item, index) => {
          Either.match((CATEGORIES[hook].check as (u: unknown) => Checked<unknown>)(item), {
            onLeft: (problems) =>
              faults.push(PluginFault.make({ plugin: plugin.name, hook, code: "invalid_contribution", problem: `${itemLabel(item, index)}: ${problems.join("; ")}` })),
            onRight: ({ name, value }) =>
              UNSUPPORTED_HOOKS.has(hook)
                ? faults.push(PluginFault.make({ plugin: plugin.name, hook, code: "hook_not_supported", problem: `${CATEGORIES[hook].noun} '${name}': nothing in this host uses ${hook} contributions yet, so it is refused rather than ignored` }))
                : accepted.push({ hook, name, value })
          })
        })
        return { accepted, faults }
      }),
      Effect.catchAll((failure) =>
        Effect.succeed({ accepted: [] as Array<Accepted>, faults: [PluginFault.make({ plugin: plugin.name, hook, ...failure })] })
      )
    ))

const order = (hook: string) => (HOOK_SET.has(hook) ? 1 + HOOKS.indexOf(hook as HookName) : 0)

/**
 * Validates a plugin set and returns the registry together with every fault (never fails).
 * `buildRegistry` is the strict form startup uses.
 */
export const collect = (candidates: ReadonlyArray<Candidate>, options: BuildOptions = {}) =>
  Effect.gen(function* () {
    const context = options.context ?? defaultContext()
    const timeout = options.hookTimeout ?? DEFAULT_HOOK_TIMEOUT
    const faults: Array<{ readonly index: number; readonly fault: PluginFault }> = []
    const shaped: Array<{ readonly index: number; readonly plugin: Shaped; readonly source: PluginSource }> = []
    candidates.forEach((candidate, index) => {
      const { faults: found, plugin } = shape(candidate)
      found.forEach((fault) => faults.push({ index, fault }))
      if (plugin !== undefined) shaped.push({ index, plugin, source: candidate.source })
    })

    const byName = new Map<string, Array<(typeof shaped)[number]>>()
    for (const s of shaped) byName.set(s.plugin.name, [...(byName.get(s.plugin.name) ?? []), s])
    for (const group of byName.values()) {
      if (group.length < 2) continue
      for (const s of group) {
        const others = group.filter((o) => o !== s).map((o) => labelOf(o.source)).join(", ")
        faults.push({ index: s.index, fault: PluginFault.make({ plugin: s.plugin.name, hook: "plugin", code: "duplicate_plugin", problem: `plugin name also used by ${others}` }) })
      }
    }

    const results = yield* Effect.forEach(shaped, (s) => runPlugin(s.plugin, context, timeout), { concurrency: "unbounded" })

    const byHook = Object.fromEntries(HOOKS.map((h) => [h, [] as Array<Contribution<unknown>>])) as Record<HookName, Array<Contribution<unknown>>>
    const owners = new Map<string, Array<{ readonly index: number; readonly plugin: string }>>()
    const plugins: Array<LoadedPlugin> = []
    shaped.forEach((s, i) => {
      const contributions: Partial<Record<HookName, Array<string>>> = {}
      for (const result of results[i] ?? []) {
        result.faults.forEach((fault) => faults.push({ index: s.index, fault }))
        for (const a of result.accepted) {
          const key = `${a.hook}\u0000${a.name}`
          const holders = owners.get(key) ?? []
          owners.set(key, [...holders, { index: s.index, plugin: s.plugin.name }])
          if (holders.length > 0) continue
          byHook[a.hook].push({ name: a.name, plugin: s.plugin.name, source: s.source, value: a.value })
          contributions[a.hook] = [...(contributions[a.hook] ?? []), a.name]
        }
      }
      plugins.push({
        name: s.plugin.name,
        source: s.source,
        contributions,
        ...(s.plugin.version !== undefined ? { version: s.plugin.version } : {}),
        ...(s.plugin.description !== undefined ? { description: s.plugin.description } : {})
      })
    })

    for (const [key, holders] of owners) {
      if (holders.length < 2) continue
      const [hook, name] = key.split("\u0000") as [HookName, string]
      holders.forEach((h, i) => {
        const others = holders.filter((_, j) => j !== i).map((o) => (o.plugin === h.plugin ? "this plugin" : `plugin '${o.plugin}'`))
        const problem = `duplicate ${CATEGORIES[hook].noun} name '${name}' (also from ${[...new Set(others)].join(", ")})`
        faults.push({ index: h.index, fault: PluginFault.make({ plugin: h.plugin, hook, code: "duplicate_name", problem }) })
      })
    }

    faults.sort((a, b) => a.index - b.index || order(a.fault.hook) - order(b.fault.hook))
    return { registry: makeRegistry(plugins, options.skipped ?? [], byHook as unknown as ByHook), faults: faults.map((f) => f.fault) }
  })

const labelOf = (source: PluginSource) =>
  source._tag === "builtin" ? "a builtin" : source._tag === "package" ? `package ${source.name}` : `module ${source.path}`

const makeRegistry = (plugins: ReadonlyArray<LoadedPlugin>, skipped: ReadonlyArray<SkippedPlugin>, byHook: ByHook): Registry => ({
  plugins,
  skipped,
  byHook,
  agentCores: byHook.agentCore,
  serviceHandlers: byHook.serviceHandler,
  actionSpecs: byHook.actionSpecs,
  skills: byHook.skillPaths,
  channels: byHook.createChannel,
  connectionRuntimes: byHook.connectionRuntime,
  speechSynthesizers: byHook.speechSynthesizer,
  containerRuntimes: byHook.containerRuntime,
  tunnels: byHook.tunnel,
  observers: byHook.observer,
  mcpServers: byHook.mcpServerSpec,
  workspaces: byHook.workspaceSpec,
  find: <K extends HookName>(hook: K, name: string) =>
    Option.fromNullable((byHook[hook] as ReadonlyArray<Contribution<ContributionTypes[K]>>).find((c) => c.name === name))
})

/** Validates a plugin set: the registry, or `PluginContributionsInvalid` listing every fault. */
export const buildRegistry = (plugins: ReadonlyArray<Candidate>, options: BuildOptions = {}) =>
  collect(plugins, options).pipe(
    Effect.flatMap(({ faults, registry }) =>
      faults.length > 0 ? Effect.fail(new PluginContributionsInvalid({ faults })) : Effect.succeed(registry)
    )
  )
