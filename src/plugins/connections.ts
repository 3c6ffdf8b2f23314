import type { PynchyConfig } from "../config/schema.js"
import { BUILTIN_CONNECTIONS } from "../config/schedules.js"
import { UI_CONNECTION } from "../config/ui.js"
import { Problem } from "../domain/errors.js"
import { nearest } from "../domain/near.js"
import type { Registry } from "./registry.js"

export interface ConfiguredConnection {
  readonly name: string
  /** The connection's settings as written; the plugin that serves the kind decodes them. */
  readonly raw: Readonly<Record<string, unknown>>
  /** Whether an enabled route uses it: a connection nobody routes to gets no runtime. */
  readonly routed: boolean
}

/** The named connections of one kind in `pynchy.yaml` `connections:`, in their written order. */
export const connectionsOfKind = (config: PynchyConfig, kind: string): ReadonlyArray<ConfiguredConnection> =>
  Object.entries(config.connections)
    .filter(([, raw]) => raw.kind === kind)
    .map(([name, raw]) => ({ name, raw, routed: config.routes.some((r) => r.enabled && r.connection === name) }))

/** Every declared connection an enabled route uses: the ones start starts. */
export const connectionsRouted = (config: PynchyConfig): ReadonlyArray<ConfiguredConnection> =>
  Object.entries(config.connections)
    .map(([name, raw]) => ({ name, raw, routed: config.routes.some((r) => r.enabled && r.connection === name) }))
    .filter((c) => c.routed)

/**
 * The runtimes of a built-in channel plugin: the settings of every connection of `kind` are
 * decoded (bad settings throw, routed or not, so they are reported either way), then each routed
 * one gets a runtime from `load`'s factory. `load` imports the runtime's module, so a host without
 * a routed connection of the kind never loads the platform's client.
 */
export const routedRuntimes = async <S, R>(
  config: PynchyConfig,
  kind: string,
  decode: (name: string, raw: Readonly<Record<string, unknown>>) => S,
  load: () => Promise<(connection: { readonly name: string; readonly settings: S }) => R>
): Promise<Array<R>> => {
  const routed = connectionsOfKind(config, kind).flatMap(({ name, raw, routed }) => {
    const settings = decode(name, raw)
    return routed ? [{ name, settings }] : []
  })
  if (routed.length === 0) return []
  const make = await load()
  return routed.map(make)
}

/**
 * Routed connections declared in `connections:` that no plugin serves (its kind is unknown, or
 * its plugin is disabled): their messages would never arrive.
 */
export const routeProblems = (config: PynchyConfig, registry: Registry): Array<Problem> => {
  const served = servedBy(registry)
  const declared = config.connections as Record<string, { readonly kind: string } | undefined>
  const problems: Array<Problem> = []
  config.routes.forEach((r, i) => {
    const connection = declared[r.connection]
    if (r.enabled && connection !== undefined && !served.has(r.connection)) {
      problems.push(Problem.make({
        path: `routes.${i}.connection`,
        reason: `no plugin serves connection '${r.connection}' (found kind '${connection.kind}'; expected a kind an enabled plugin serves, see \`pynchy plugins\`)`
      }))
    }
  })
  return problems
}

const servedBy = (registry: Registry) => new Set([...registry.connectionRuntimes.map((c) => c.name), ...registry.channels.map((c) => c.name)])

/**
 * Enabled routes to a connection that is not declared in `connections:` and is neither built in
 * (cli, terminal, ui) nor a plugin's own. On a host whose connections all come from plugins (the
 * default host) their messages would never arrive; a custom host may bring channels of its own.
 */
export const undeclaredRouteProblems = (config: PynchyConfig, registry: Registry): Array<Problem> => {
  const known = [...new Set([...BUILTIN_CONNECTIONS, UI_CONNECTION, ...Object.keys(config.connections), ...servedBy(registry)])]
  const problems: Array<Problem> = []
  config.routes.forEach((r, i) => {
    if (!r.enabled || known.includes(r.connection)) return
    const near = nearest(r.connection, known)
    problems.push(Problem.make({
      path: `routes.${i}.connection`,
      reason: `connection '${r.connection}' is not declared in connections:${near !== undefined ? `; did you mean '${near}'?` : ` (known: ${known.join(", ")})`}`
    }))
  })
  return problems
}
