/**
 * The doctor's checks of what plugins and config add: each host MCP server started once and its
 * tools listed, each sandbox MCP server's paths looked up as its sandbox would; each tunnel detected, and the public URL when one is present.
 */
import { Effect, Layer } from "effect"
import { detectTunnels, publicUrl, type TunnelReport } from "../../tunnels/detect.js"
import { HostConfig } from "../../config/HostConfig.js"
import { McpHost } from "../../mcp/McpHost.js"
import { checkSandboxServer } from "../../mcp/sandbox-check.js"
import { PluginRegistry } from "../../plugins/PluginRegistry.js"
import type { Check } from "./doctor-checks.js"
import { BUILTINS } from "../../builtins/list.js"

/**
 * A host server is started once here, its tools listed (with any whose schema does not compile)
 * and stopped. A sandbox server is not started: it runs only in a turn's sandbox, so its paths are
 * looked up where that sandbox would find them (src/mcp/sandbox-check.ts).
 */
const mcpChecks = (host: HostConfig.Service) => Effect.gen(function* () {
    const mcp = yield* McpHost
    return yield* Effect.forEach(mcp.servers, ({ source, spec }) => {
      const label = `${spec.name} (${spec.where}, from ${source})`
      if (spec.where === "sandbox") {
        const { problems, workspaces } = checkSandboxServer(spec, host.config.workspaces, host.dataDir)
        return Effect.succeed<Check>(problems.length === 0
          ? { verdict: "ok", name: "mcp", detail: `${label}: its command and paths are where the sandbox looks (${workspaces.length > 0 ? `workspaces: ${workspaces.join(", ")}` : "no configured workspace lists it"}); not started: it runs in each turn's sandbox` }
          : { verdict: "fail", name: "mcp", detail: `${label}: ${problems.join("; ")}`, fix: `check mcpServers '${spec.name}': a sandbox sees /usr and the workspace folder at /workspace only` })
      }
      return mcp.inspect(spec).pipe(
        Effect.match({
          onSuccess: (tools): Check => {
            const vague = tools.filter((t) => t.schemaProblem !== undefined)
            const offered = tools.filter((t) => t.schemaProblem === undefined)
            return vague.length === 0
              ? { verdict: "ok", name: "mcp", detail: `${label}: ${offered.length} tool(s): ${offered.map((t) => t.offered).join(", ") || "none"}` }
              : {
                verdict: "warn",
                name: "mcp",
                detail: `${label}: ${offered.length} tool(s): ${offered.map((t) => t.offered).join(", ") || "none"}; not offered, input schema does not compile: ${vague.map((t) => `${t.name} (${t.schemaProblem})`).join(", ")}`,
                fix: "a tool's inputSchema must be JSON Schema draft-07 that ajv compiles in strict mode"
              }
          },
          onFailure: (f): Check => ({
            verdict: "fail",
            name: "mcp",
            detail: `${label}: ${f.code}: ${f.reason}`,
            fix: `check mcpServers '${spec.name}': its command, args and env`
          })
        })
      )
    }, { concurrency: 4 })
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
  Effect.map(Effect.all([mcpChecks(host), tunnelChecks], { concurrency: "unbounded" }), ([mcp, tunnels]) => [...mcp, ...tunnels]).pipe(
    Effect.provide(Layer.provideMerge(McpHost.layer, PluginRegistry.layerWith({ builtins: BUILTINS })).pipe(Layer.provide(Layer.succeed(HostConfig, host)))),
    Effect.catchAll((e) => Effect.succeed<ReadonlyArray<Check>>([{ verdict: "fail", name: "plugins", detail: e.message, fix: "run `pynchy plugins` and `pynchy config check`" }]))
  )
