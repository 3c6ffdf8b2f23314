/**
 * Workspaces from plugins (`workspaceSpec`) joined to the configured ones. An id both declare is a
 * startup fault naming both sources, unless the config entry says `enabled: false`, which turns
 * the plugin's workspace off (a config workspace with `enabled: false` is off too). The host
 * sees the result as its config's `workspaces`, so routing, schedules and MCP servers treat a
 * plugin's workspace like any other.
 */
import { Effect, Layer, Option } from "effect"
import { ConfigInvalid, HostConfig } from "../config/HostConfig.js"
import { PynchyConfig } from "../config/schema.js"
import { Problem } from "../domain/errors.js"
import type { Workspace } from "../domain/workspace.js"
import { scheduleProblems } from "../config/schedules.js"
import { PluginRegistry } from "./PluginRegistry.js"
import type { Contribution } from "./registry.js"

/** The enabled workspaces, configured then contributed, or every problem with its path. */
export const joinWorkspaces = (config: PynchyConfig, contributed: ReadonlyArray<Contribution<Workspace>>): { readonly workspaces: ReadonlyArray<Workspace>; readonly problems: ReadonlyArray<Problem> } => {
  const problems: Array<Problem> = []
  const configured = new Map(config.workspaces.map((w, i) => [w.id as string, { w, i }]))
  const joined: Array<Workspace> = config.workspaces.filter((w) => w.enabled)
  for (const c of contributed) {
    const at = `plugins.${c.plugin}.workspaceSpec.${c.name}`
    const clash = configured.get(c.value.id)
    if (clash !== undefined) {
      if (clash.w.enabled) {
        problems.push(Problem.make({ path: `workspaces.${clash.i}.id`, reason: `workspace '${c.value.id}' is declared by config and by plugin '${c.plugin}' (rename one, or write { id: ${c.value.id}, enabled: false } to turn the plugin's off)` }))
      }
      continue
    }
    if (!c.value.enabled) continue
    joined.push(c.value)
    const own = scheduleProblems(PynchyConfig.make({ connections: config.connections, workspaces: [c.value] }))
    problems.push(...own.map((p) => Problem.make({ path: p.path.replace(/^workspaces\.0/, at), reason: p.reason })))
  }
  return { workspaces: joined, problems }
}

/** Route targets that name no enabled workspace. */
export const routeWorkspaceProblems = (config: PynchyConfig, workspaces: ReadonlyArray<Workspace>): Array<Problem> => {
  const ids = new Set(workspaces.map((w) => w.id as string))
  return config.routes.flatMap((r, i) =>
    r.enabled && !ids.has(r.workspace) ? [Problem.make({ path: `routes.${i}.workspace`, reason: `unknown workspace '${r.workspace}' (declared: ${[...ids].join(", ") || "none"})` })] : []
  )
}

/** The host's config with the plugins' workspaces joined in, for every step after the plugins. */
export const layerJoinedConfig: Layer.Layer<HostConfig, ConfigInvalid, HostConfig | PluginRegistry> = Layer.effect(
  HostConfig,
  Effect.gen(function* () {
    const host = yield* HostConfig
    const registry = yield* PluginRegistry
    const { problems, workspaces } = joinWorkspaces(host.config, registry.workspaces)
    const all = [...problems, ...routeWorkspaceProblems(host.config, workspaces)]
    if (all.length > 0) return yield* new ConfigInvalid({ file: Option.getOrElse(host.file, () => "(embedded defaults)"), problems: all })
    return { ...host, config: PynchyConfig.make({ ...host.config, workspaces }) }
  })
)
