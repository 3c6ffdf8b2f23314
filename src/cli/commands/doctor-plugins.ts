/**
 * The doctor's checks of what plugins and config add: each MCP server started once on this host
 * and its tools listed; each tunnel detected, and the public URL when one is present.
 */
import { Effect, Layer } from "effect"
import { detectTunnels, publicUrl, type TunnelReport } from "../../tunnels/detect.js"
import { HostConfig } from "../../config/HostConfig.js"
import { McpHost } from "../../mcp/McpHost.js"
import { PluginRegistry } from "../../plugins/PluginRegistry.js"
import type { Check } from "./doctor-checks.js"
import { BUILTINS } from "../../builtins/list.js"

/**
 * Every MCP server started once here, listed and stopped. A sandbox server is started on the host
 * for the check (its turns start it in the sandbox), so its failure here is only a warning.
 */
const mcpChecks = Effect.gen(function* () {
    const mcp = yield* McpHost
    return yield* Effect.forEach(mcp.servers, ({ source, spec }) =>
      mcp.inspect(spec).pipe(
        Effect.match({
          onSuccess: (tools): Check => ({
            verdict: "ok",
            name: "mcp",
            detail: `${spec.name} (${spec.where}, from ${source}): ${tools.length} tool(s): ${tools.map((t) => t.offered).join(", ") || "none"}`
          }),
          onFailure: (f): Check => ({
            verdict: spec.where === "host" ? "fail" : "warn",
            name: "mcp",
            detail: `${spec.name} (${spec.where}, from ${source}): ${f.code}: ${f.reason}${spec.where === "sandbox" ? " (started on this host for the check)" : ""}`,
            fix: `check mcpServers '${spec.name}': its command, args and env`
          })
        })
      ), { concurrency: 4 })
  })

/** One line per tunnel: present or absent is not a problem; a detector that fails or hangs is. */
export const tunnelLines = (reports: ReadonlyArray<TunnelReport>): ReadonlyArray<Check> => {
  const url = publicUrl(reports)
  return [
    ...reports.map((r): Check => ({
      verdict: r.code === undefined ? "ok" : "warn",
      name: "tunnel",
      detail: `${r.name} (from plugin '${r.plugin}'): ${r.present ? "present" : "absent"}: ${r.detail}${r.url !== undefined ? ` (${r.url})` : ""}`,
      ...(r.code !== undefined ? { fix: `the ${r.name} detector (${r.code}): check its plugin` } : {})
    })),
    { verdict: "ok", name: "tunnel", detail: url !== undefined ? `public URL ${url.url} (${url.name})` : "no tunnel present: the host is reachable on its own addresses only" }
  ]
}

const tunnelChecks = Effect.flatMap(PluginRegistry, (registry) => Effect.map(detectTunnels(registry.tunnels), tunnelLines))

/** The MCP and tunnel checks over the plugins and config; plugins that do not load are one fail. */
export const pluginChecks = (host: HostConfig.Service): Effect.Effect<ReadonlyArray<Check>> =>
  Effect.map(Effect.all([mcpChecks, tunnelChecks], { concurrency: "unbounded" }), ([mcp, tunnels]) => [...mcp, ...tunnels]).pipe(
    Effect.provide(Layer.provideMerge(McpHost.layer, PluginRegistry.layerWith({ builtins: BUILTINS })).pipe(Layer.provide(Layer.succeed(HostConfig, host)))),
    Effect.catchAll((e) => Effect.succeed<ReadonlyArray<Check>>([{ verdict: "fail", name: "plugins", detail: e.message, fix: "run `pynchy plugins` and `pynchy config check`" }]))
  )
