/**
 * The MCP tool servers of this host: the config's `mcpServers:` and the plugins' `mcpServerSpec`
 * contributions, one name each. A workspace's `where: sandbox` servers go into its turn spec (the
 * runner starts them in the sandbox); `where: host` servers start here on first use, once, shared
 * by every turn, and close with the layer's scope. A host server that is down is started again at
 * its next use. Every failure is an `McpFailed` with the code the model reads.
 */
import { Config, Context, Duration, Effect, Layer, Option, Redacted, Schema } from "effect"
import * as os from "node:os"
import { connectMcp, type McpConnection, type McpLaunch, McpProblem } from "../protocol/mcp-client.js"
import { HostConfig } from "../config/HostConfig.js"
import { McpFailureCode, McpServerSpec } from "../domain/mcp.js"
import type { Workspace } from "../domain/workspace.js"
import { PluginRegistry } from "../plugins/PluginRegistry.js"
import type { McpLaunchSpec, ToolSpec, UnavailableServer } from "../protocol/ipc.js"

export class McpFailed extends Schema.TaggedError<McpFailed>()("McpFailed", {
  server: Schema.String,
  code: McpFailureCode,
  reason: Schema.String
}) {}

/** Two sources name one server, or a configured workspace lists a server nobody declares. */
export class McpServersInvalid extends Schema.TaggedError<McpServersInvalid>()("McpServersInvalid", {
  problems: Schema.Array(Schema.String)
}) {
  override get message() {
    return `MCP servers are misconfigured:\n${this.problems.map((p) => `  - ${p}`).join("\n")}`
  }
}

/** A server with where it was declared (`config` or `plugin '<name>'`). */
export interface DeclaredServer {
  readonly spec: McpServerSpec
  readonly source: string
}

/** What a turn gets of its workspace's servers. */
export interface TurnServers {
  /** The host servers' tools, called over IPC under host policy. */
  readonly tools: ReadonlyArray<ToolSpec>
  /** The sandbox servers, for the runner to start. */
  readonly launches: ReadonlyArray<McpLaunchSpec>
  /** Listed servers offering nothing this turn, and why. */
  readonly unavailable: ReadonlyArray<UnavailableServer>
}

export interface McpToolTarget {
  readonly spec: McpServerSpec
  readonly tool: string
}

export declare namespace McpHost {
  export interface Service {
    readonly servers: ReadonlyArray<DeclaredServer>
    /** The workspace's servers for one turn: host servers are started (or reused) and listed. */
    readonly forTurn: (workspace: Workspace) => Effect.Effect<TurnServers>
    /** The host server tool an offered name (`<server>__<tool>`) means for this workspace. */
    readonly route: (workspace: Workspace, offered: string) => Option.Option<McpToolTarget>
    /** Calls a host server's tool under its deadline; `mcp_tool_error` when the server answered with an error. */
    readonly call: (target: McpToolTarget, input: unknown) => Effect.Effect<string, McpFailed>
    /** Starts a server once on this host, lists its tools and stops it (`pynchy doctor`). */
    readonly inspect: (spec: McpServerSpec) => Effect.Effect<ReadonlyArray<{ readonly name: string; readonly offered: string; readonly description: string }>, McpFailed>
  }
}

const failedFrom = (server: string, e: unknown) =>
  e instanceof McpProblem && Schema.is(McpFailureCode)(e.code)
    ? new McpFailed({ server, code: e.code, reason: e.message })
    : new McpFailed({ server, code: "mcp_call_failed", reason: `MCP server '${server}' failed` })

/** The servers of config and plugins, or every clash and unknown name of the configured workspaces. */
export const declaredServers = (configured: ReadonlyArray<McpServerSpec>, contributed: ReadonlyArray<{ readonly plugin: string; readonly value: McpServerSpec }>, workspaces: ReadonlyArray<Workspace>) => {
  const all: Array<DeclaredServer> = [...configured.map((spec) => ({ spec, source: "config" })), ...contributed.map((c) => ({ spec: c.value, source: `plugin '${c.plugin}'` }))]
  const problems: Array<string> = []
  const byName = new Map<string, DeclaredServer>()
  for (const d of all) {
    const first = byName.get(d.spec.name)
    if (first !== undefined) problems.push(`MCP server '${d.spec.name}' is declared twice: by ${first.source} and by ${d.source}`)
    else byName.set(d.spec.name, d)
  }
  for (const w of workspaces) {
    for (const name of w.mcpServers) {
      if (!byName.has(name)) problems.push(`workspaces.${w.id}.mcpServers: no MCP server named '${name}' (declare it under mcpServers: or install the plugin that contributes it)`)
    }
  }
  return problems.length > 0 ? Effect.fail(new McpServersInvalid({ problems })) : Effect.succeed({ all, byName })
}

// The values of a server's env names, read through Config (an unset name is left out).
const envOf = (spec: McpServerSpec) =>
  Effect.map(
    Effect.forEach(spec.env, (name) => Effect.map(Config.option(Config.redacted(name)), (v) => Option.map(v, (r) => [name, Redacted.value(r)] as const))),
    (pairs) => Object.fromEntries(Option.reduceCompact(pairs, [] as Array<readonly [string, string]>, (acc, p) => [...acc, p]))
  ).pipe(Effect.orDie)

const launchOf = (spec: McpServerSpec, env: Record<string, string>): McpLaunch => ({
  name: spec.name,
  command: spec.command,
  args: spec.args,
  env,
  tools: spec.tools,
  timeoutSeconds: spec.timeoutSeconds
})

/** Starts a server with its deadline; the deadline aborts the start, which stops the process. */
const start = (spec: McpServerSpec, cwd: string) =>
  Effect.flatMap(envOf(spec), (env) =>
    Effect.tryPromise({ try: (signal) => connectMcp(launchOf(spec, env), cwd, process.execPath, signal), catch: (e) => failedFrom(spec.name, e) }).pipe(
      Effect.timeoutFail({
        duration: Duration.seconds(spec.timeoutSeconds),
        onTimeout: () => new McpFailed({ server: spec.name, code: "mcp_start_timeout", reason: `MCP server '${spec.name}' did not start within ${spec.timeoutSeconds}s` })
      })
    ))

export class McpHost extends Context.Tag("pynchy/McpHost")<McpHost, McpHost.Service>() {
  static readonly make = Effect.gen(function* () {
    const { config, dataDir } = yield* HostConfig
    const registry = yield* PluginRegistry
    const { all, byName } = yield* declaredServers(config.mcpServers, registry.mcpServers, config.workspaces)
    // Host servers run in the data dir (or the home folder when it is gone): never in a workspace.
    const cwd = dataDir !== "" ? dataDir : os.homedir()
    const live = new Map<string, McpConnection>()
    const locks = new Map(yield* Effect.forEach(all.filter((d) => d.spec.where === "host"), (d) => Effect.map(Effect.makeSemaphore(1), (s) => [d.spec.name, s] as const)))
    yield* Effect.addFinalizer(() => Effect.promise(() => Promise.all([...live.values()].map((c) => c.close()))))

    /** The live connection of a host server, started when there is none (one start at a time per server). */
    const connection = (spec: McpServerSpec) =>
      locks.get(spec.name)!.withPermits(1)(Effect.suspend(() => {
        const current = live.get(spec.name)
        if (current !== undefined && !current.closed()) return Effect.succeed(current)
        return Effect.tap(Effect.interruptible(start(spec, cwd)), (c) => Effect.sync(() => live.set(spec.name, c)))
      }))

    const forTurn = Effect.fn("McpHost.forTurn")(function* (workspace: Workspace) {
      const tools: Array<ToolSpec> = []
      const launches: Array<McpLaunchSpec> = []
      const unavailable: Array<UnavailableServer> = []
      yield* Effect.forEach(workspace.mcpServers, (name) => {
        const declared = byName.get(name)
        if (declared === undefined) {
          unavailable.push({ server: name, code: "mcp_unknown_server", reason: `no MCP server named '${name}' is declared` })
          return Effect.void
        }
        const spec = declared.spec
        if (spec.where === "sandbox") {
          return Effect.map(envOf(spec), (env) => void launches.push({ ...launchOf(spec, env), ...(spec.tools !== undefined ? { tools: spec.tools } : {}) }))
        }
        return connection(spec).pipe(
          Effect.map((c) => {
            for (const t of c.tools) tools.push({ name: t.offered, action: `mcp:${spec.name}/${t.name}`, description: t.description, inputSchema: { ...t.inputSchema } })
          }),
          Effect.catchAll((f) => Effect.sync(() => unavailable.push({ server: name, code: f.code, reason: f.reason })))
        )
      })
      return { tools, launches, unavailable }
    })

    const route = (workspace: Workspace, offered: string): Option.Option<McpToolTarget> => {
      const at = offered.indexOf("__")
      if (at <= 0) return Option.none()
      const server = offered.slice(0, at)
      const spec = byName.get(server)?.spec
      if (spec === undefined || spec.where !== "host" || !workspace.mcpServers.includes(server)) return Option.none()
      return Option.some({ spec, tool: offered.slice(at + 2) })
    }

    const call = Effect.fn("McpHost.call")(function* (target: McpToolTarget, input: unknown) {
      const { spec, tool } = target
      const c = yield* connection(spec)
      const answer = yield* Effect.tryPromise({ try: (signal) => c.call(tool, input, signal), catch: (e) => failedFrom(spec.name, e) }).pipe(
        Effect.timeoutFail({
          duration: Duration.seconds(spec.timeoutSeconds),
          onTimeout: () => new McpFailed({ server: spec.name, code: "mcp_call_timeout", reason: `MCP server '${spec.name}' did not answer within ${spec.timeoutSeconds}s` })
        }),
        // A server that hung is stopped: the next use starts it afresh.
        Effect.tapError((f) => (f.code === "mcp_call_timeout" ? Effect.promise(() => c.close()).pipe(Effect.zipRight(Effect.sync(() => live.get(spec.name) === c && live.delete(spec.name)))) : Effect.void))
      )
      if (!answer.ok) return yield* new McpFailed({ server: spec.name, code: "mcp_tool_error", reason: answer.text.slice(0, 2_000) })
      return answer.text
    })

    const inspect = (spec: McpServerSpec) =>
      Effect.acquireUseRelease(
        Effect.interruptible(start(spec, cwd)),
        (c) => Effect.succeed(c.tools.map((t) => ({ name: t.name, offered: t.offered, description: t.description }))),
        (c) => Effect.promise(() => c.close())
      )

    return McpHost.of({ servers: all, forTurn, route, call, inspect })
  })

  static readonly layer = Layer.scoped(McpHost, McpHost.make)

  /** No servers (hosts and tests without MCP). */
  static readonly none: McpHost.Service = {
    servers: [],
    forTurn: () => Effect.succeed({ tools: [], launches: [], unavailable: [] }),
    route: () => Option.none(),
    call: (target) => Effect.fail(new McpFailed({ server: target.spec.name, code: "mcp_start_failed", reason: "no MCP servers on this host" })),
    inspect: (spec) => Effect.fail(new McpFailed({ server: spec.name, code: "mcp_start_failed", reason: "no MCP servers on this host" }))
  }
}
