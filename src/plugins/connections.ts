import type { PynchyConfig } from "../config/schema.js"
import { Problem } from "../domain/errors.js"
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

/**
 * Routed connections declared in `connections:` that no plugin serves (its kind is unknown, or
 * its plugin is disabled): their messages would never arrive.
 */
export const routeProblems = (config: PynchyConfig, registry: Registry): Array<Problem> => {
  const served = new Set([...registry.connectionRuntimes.map((c) => c.name), ...registry.channels.map((c) => c.name)])
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
