/**
 * Everything `start` decodes and validates before it opens anything, run without starting
 * anything: `pynchy config check` and `pynchy doctor` call it, and the start path calls the very
 * same functions (HostConfig.load, PluginRegistry.inspect via make, resolveCatalog via
 * Gateway.make), so a config that makes `start` fail makes the check fail on the same path.
 */
import { Effect, Either, Option } from "effect"
import { type ConfigInvalid, HostConfig } from "../config/HostConfig.js"
import { readTokenHashes } from "../config/token-hashes.js"
import { Problem } from "../domain/errors.js"
import { type GatewayConfigInvalid, resolveCatalog } from "../gateway/catalog.js"
import { routeProblems } from "../plugins/connections.js"
import type { PluginContributionsInvalid, PluginFault } from "../plugins/errors.js"
import { declaredServers } from "../mcp/McpHost.js"
import { joinWorkspaces, routeWorkspaceProblems } from "../plugins/workspaces.js"
import { PluginRegistry } from "../plugins/PluginRegistry.js"
import { BUILTINS } from "../builtins/list.js"

/**
 * A plugin fault as a config problem: settings a plugin rejected name their path
 * (`connections.<name>.<field>: ...`); anything else is the plugin's and hook's.
 */
export const faultProblem = (f: PluginFault): Problem => {
  const at = /^(?:Error: )?(connections\.[^\s:]+): ([\s\S]*)$/.exec(f.problem)
  return at !== null
    ? Problem.make({ path: at[1]!, reason: at[2]! })
    : Problem.make({ path: `plugins.${f.plugin}.${f.hook}`, reason: `${f.code}: ${f.problem}` })
}

/** The problems of any error the start path reports for bad config; none for other errors. */
export const startProblems = (error: unknown): ReadonlyArray<Problem> => {
  const e = error as Partial<ConfigInvalid | GatewayConfigInvalid | PluginContributionsInvalid> | null
  if (e === null || typeof e !== "object") return []
  if ((e._tag === "ConfigInvalid" || e._tag === "GatewayConfigInvalid") && "problems" in e) return e.problems ?? []
  if (e._tag === "PluginContributionsInvalid" && "faults" in e) return (e.faults ?? []).map(faultProblem)
  const mcp = error as { readonly _tag?: unknown; readonly problems?: unknown }
  if (mcp._tag === "McpServersInvalid" && Array.isArray(mcp.problems)) return mcp.problems.map((reason: string) => Problem.make({ path: "mcpServers", reason }))
  const ui = error as { readonly _tag?: unknown; readonly at?: unknown; readonly reason?: unknown }
  if (ui._tag === "ControlUiStartFailed" && typeof ui.at === "string" && typeof ui.reason === "string") return [Problem.make({ path: ui.at, reason: ui.reason })]
  return []
}

/** One check start makes; `config check` runs them all and reports every problem. */
export interface PreflightCheck {
  readonly name: string
  readonly run: Effect.Effect<ReadonlyArray<Problem>, never, HostConfig>
}

const plugins: PreflightCheck = {
  name: "plugins",
  run: Effect.gen(function* () {
    const host = yield* HostConfig
    const inspected = yield* Effect.either(PluginRegistry.inspect({ builtins: BUILTINS }))
    if (Either.isLeft(inspected)) return [Problem.make({ path: "PYNCHY_PLUGINS", reason: `cannot be read (${String(inspected.left)})` })]
    const { faults, registry } = inspected.right
    const problems = faults.map(faultProblem)
    // A connection whose settings its plugin refused is reported once, not again as unserved.
    const refused = new Set(problems.flatMap((p) => p.path.startsWith("connections.") ? [p.path.split(".")[1]] : []))
    const joined = joinWorkspaces(host.config, registry.workspaces)
    const servers = yield* Effect.either(declaredServers(host.config.mcpServers, registry.mcpServers, joined.workspaces))
    return [
      ...(Either.isLeft(servers) ? servers.left.problems.map((reason) => Problem.make({ path: "mcpServers", reason })) : []),
      ...problems,
      ...routeProblems(host.config, registry).filter((p) => !refused.has(host.config.routes[Number(p.path.split(".")[1])]?.connection)),
      ...joined.problems,
      ...routeWorkspaceProblems(host.config, joined.workspaces)
    ]
  })
}

const gateway: PreflightCheck = {
  name: "gateway",
  run: Effect.gen(function* () {
    const { config } = yield* HostConfig
    const catalog = yield* Effect.either(resolveCatalog(config.providers, config.gateway))
    return Either.isLeft(catalog) ? catalog.left.problems : []
  })
}

/** The Control UI's tokens file is read at start: a missing or malformed one is reported here too. */
const ui: PreflightCheck = {
  name: "ui",
  run: Effect.gen(function* () {
    const { config, dataDir } = yield* HostConfig
    if (config.ui === undefined) return []
    const read = yield* Effect.either(readTokenHashes("ui", config.ui, dataDir))
    return Either.isLeft(read) ? [Problem.make({ path: read.left.at, reason: read.left.reason })] : []
  })
}

/**
 * The checks, in start's order. Schedules (cron expressions of workspaces and tasks) join here
 * as one more check when the scheduler lands.
 */
export const PREFLIGHT_CHECKS: ReadonlyArray<PreflightCheck> = [plugins, gateway, ui]

/** Every problem start would refuse beyond the file's own decoding (HostConfig.load does that). */
export const preflight: Effect.Effect<ReadonlyArray<Problem>, never, HostConfig> = Effect.map(
  Effect.forEach(PREFLIGHT_CHECKS, (c) => c.run),
  (all) => all.flat()
)

export interface CheckResult {
  /** The decoded config, when the file itself decoded. */
  readonly loaded: Option.Option<HostConfig.Service>
  /** The config file read, or none for the embedded defaults. */
  readonly file: Option.Option<string>
  readonly problems: ReadonlyArray<Problem>
}

/** `pynchy config check`: the file decoded as start decodes it, then every preflight check. */
export const checkConfig: Effect.Effect<CheckResult> = Effect.gen(function* () {
  const loaded = yield* Effect.either(HostConfig.load)
  if (Either.isLeft(loaded)) {
    const e = loaded.left
    return e._tag === "ConfigInvalid"
      ? { loaded: Option.none(), file: Option.some(e.file), problems: e.problems }
      : { loaded: Option.none(), file: Option.none(), problems: [Problem.make({ path: "environment", reason: String(e) })] }
  }
  const problems = yield* preflight.pipe(Effect.provideService(HostConfig, loaded.right))
  return { loaded: Option.some(loaded.right), file: loaded.right.file, problems }
})
