import type { PynchyConfig } from "../config/schema.js"

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
