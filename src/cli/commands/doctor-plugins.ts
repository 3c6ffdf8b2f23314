/**
 * The doctor's checks of what plugins and config add: each MCP server started once on this host
 * and its tools listed.
 */
import { Effect, Layer } from "effect"
import { HostConfig } from "../../config/HostConfig.js"
import { McpHost } from "../../mcp/McpHost.js"
import { PluginRegistry } from "../../plugins/PluginRegistry.js"
import type { Check } from "./doctor.js"

/**
 * Every MCP server started once here, listed and stopped. A sandbox server is started on the host
 * for the check (its turns start it in the sandbox), so its failure here is only a warning.
 */
export const mcpChecks = (host: HostConfig.Service): Effect.Effect<ReadonlyArray<Check>> =>
  Effect.gen(function* () {
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
  }).pipe(
    Effect.provide(Layer.provideMerge(McpHost.layer, PluginRegistry.layer).pipe(Layer.provide(Layer.succeed(HostConfig, host)))),
    Effect.catchAll((e) => Effect.succeed<ReadonlyArray<Check>>([{ verdict: "fail", name: "mcp", detail: e.message, fix: "run `pynchy plugins` and `pynchy config check`" }]))
  )
