/**
 * Everything `start` decodes and validates before it opens anything, run without starting
 * anything: `pynchy config check` and `pynchy doctor` call it, and the start path calls the very
 * same functions (HostConfig.load, PluginRegistry.inspect via make, resolveCatalog via
 * Gateway.make), so a config that makes `start` fail makes the check fail on the same path.
 */
import { Effect, Either, Option, Redacted } from "effect"
import * as fs from "node:fs"
import { touches } from "../config/inspect.js"
import { credentialProblem } from "../channels/token.js"
import { connectionCredentials } from "../builtins/credentials.js"
import { type ConfigInvalid, HostConfig } from "../config/HostConfig.js"
import { readTokenHashes } from "../config/token-hashes.js"
import { Problem } from "../domain/errors.js"
import { type GatewayConfigInvalid, readProviderKey, resolveCatalog } from "../gateway/catalog.js"
import { connectionsRouted, routeProblems, undeclaredRouteProblems } from "../plugins/connections.js"
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
  const runtime = error as { readonly _tag?: unknown; readonly reason?: unknown }
  if (runtime._tag === "RuntimeStartFailed" && typeof runtime.reason === "string") {
    // A runtime that could not read a setting (its token's variable unset) names the setting.
    const at = /(connections\.[^\s:]+): ([^;]*)/.exec(runtime.reason)
    if (at !== null) return [Problem.make({ path: at[1]!, reason: at[2]! })]
  }
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
      ...undeclaredRouteProblems(host.config, registry),
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
 * The secrets routed connections read when they start (a bot token's variable, a token file):
 * start fails on a missing one, so the check names it first.
 */
const credentials: PreflightCheck = {
  name: "credentials",
  run: Effect.gen(function* () {
    const { config, dataDir } = yield* HostConfig
    const routed = connectionsRouted(config)
    const found = yield* Effect.forEach(routed, ({ name, raw }) =>
      Effect.forEach(connectionCredentials(name, raw), (c) =>
        Effect.map(credentialProblem(c, dataDir), (reason) => reason === undefined ? [] : [Problem.make({ path: `connections.${name}.${c.field}`, reason })])))
    return found.flat(2)
  })
}

/**
 * The checks, in start's order. Schedules (cron expressions of workspaces and tasks) join here
 * as one more check when the scheduler lands.
 */
export const PREFLIGHT_CHECKS: ReadonlyArray<PreflightCheck> = [plugins, gateway, credentials, ui]

/** A provider key this short is not masked in replies and logs (it would mask ordinary words). */
export const MIN_MASKED_KEY_LENGTH = 8

/** What start accepts but the user should know: provider keys too short to be masked. */
export const preflightWarnings: Effect.Effect<ReadonlyArray<Problem>, never, HostConfig> = Effect.gen(function* () {
  const { config } = yield* HostConfig
  const keys = yield* Effect.forEach(config.providers, readProviderKey)
  return config.providers.flatMap((p, i) => {
    const keyed = keys[i]!
    const short = "key" in keyed && Option.isSome(keyed.key) && Redacted.value(keyed.key.value).length < MIN_MASKED_KEY_LENGTH
    return short
      ? [Problem.make({ path: `providers.${i}.${p.apiKeyEnv !== undefined ? "apiKeyEnv" : "apiKeyFile"}`, reason: `the key is shorter than ${MIN_MASKED_KEY_LENGTH} characters: it is not masked in replies and logs (fine for a dummy key of a local server)` })]
      : []
  })
})

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
  /** What start accepts but is likely a mistake (a key too short to be masked). */
  readonly warnings: ReadonlyArray<Problem>
}

/**
 * `pynchy config check`: the file decoded as start decodes it, then every preflight check, all
 * in one run. With problems in the file, the later checks run on the rest of it (the values the
 * schema refused left out), and a problem about a value left out is not named twice.
 */
export const checkConfig: Effect.Effect<CheckResult> = Effect.gen(function* () {
  const inspected = yield* Effect.either(HostConfig.inspect)
  if (Either.isLeft(inspected)) {
    const e = inspected.left
    return e._tag === "ConfigInvalid"
      ? { loaded: Option.none(), file: Option.some(e.file), problems: e.problems, warnings: [] }
      : { loaded: Option.none(), file: Option.none(), problems: [Problem.make({ path: "environment", reason: String(e) })], warnings: [] }
  }
  const { file, loaded, omitted, problems } = inspected.right
  const shown = fs.existsSync(file) ? Option.some(file) : Option.none()
  if (Option.isNone(loaded)) return { loaded, file: Option.some(file), problems, warnings: [] }
  const later = yield* preflight.pipe(Effect.provideService(HostConfig, loaded.value))
  const warnings = yield* preflightWarnings.pipe(Effect.provideService(HostConfig, loaded.value))
  return {
    loaded: problems.length > 0 ? Option.none() : loaded,
    file: shown,
    problems: [...problems, ...later.filter((p) => !touches(p.path, omitted))],
    warnings
  }
})
