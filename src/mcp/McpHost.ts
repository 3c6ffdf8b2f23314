/**
 * The MCP tool servers of this host: the config's `mcpServers:` and the plugins' `mcpServerSpec`
 * contributions, one name each. A workspace's `where: sandbox` servers go into its turn spec (the
 * runner starts them in the sandbox); `where: host` servers start here on first use, once, shared
 * by every turn, and close with the layer's scope. A host server that is down is started again at
 * its next use. Every failure is an `McpFailed` with the code the model reads.
 *
 * A host server runs as the host's user, so what the agent sends it is input from a stranger: every
 * call is checked against the tool's own `inputSchema` (compiled once, by the validator host
 * actions use) before policy and before the server sees it, and a tool whose schema does not
 * compile is neither offered nor called. Each server runs in a folder of its own,
 * `<dataDir>/mcp/<server>/` (0700), never in the data dir or a workspace.
 */
import type { Ajv } from "ajv"
import { Config, Context, Duration, Effect, Either, Layer, Option, Redacted, Schema } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { compileInput, type InputCheck, newValidator } from "../system/json-schema.js"
import { connectMcp, type McpConnection, type McpLaunch, McpProblem } from "../protocol/mcp-client.js"
import { HostConfig } from "../config/HostConfig.js"
import { McpFailureCode, McpServerSpec } from "../domain/mcp.js"
import type { Workspace } from "../domain/workspace.js"
import { PluginRegistry } from "../plugins/PluginRegistry.js"
import type { McpLaunchSpec, ToolSpec, UnavailableServer } from "../protocol/ipc.js"

export class McpFailed extends Schema.TaggedError<McpFailed>()("McpFailed", {
  server: Schema.String,
  code: McpFailureCode,
  reason: Schema.String,
  /** What a server that is gone last wrote to stderr (redacted): for the host's log, not the agent. */
  stderr: Schema.optional(Schema.String)
}) {}

/** A call whose input breaks the tool's `inputSchema` (problems name the path and rule, never the value). */
export class McpInputInvalid extends Schema.TaggedError<McpInputInvalid>()("McpInputInvalid", {
  server: Schema.String,
  tool: Schema.String,
  problems: Schema.Array(Schema.String)
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

/** A started host server and the compiled check of each of its tools (or why its schema does not compile). */
interface Live {
  readonly connection: McpConnection
  readonly checks: ReadonlyMap<string, Either.Either<InputCheck, string>>
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

/** A tool as `pynchy doctor` shows it; `schemaProblem` when its input schema does not compile (it is not offered). */
export interface InspectedTool {
  readonly name: string
  readonly offered: string
  readonly description: string
  readonly schemaProblem?: string
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
    /** Checks a call's input against the tool's `inputSchema` (starting the server if it is down, to know the tool). */
    readonly check: (target: McpToolTarget, input: unknown) => Effect.Effect<void, McpFailed | McpInputInvalid>
    /** Checks, then calls a host server's tool under its deadline; `mcp_tool_error` when the server answered with an error. */
    readonly call: (target: McpToolTarget, input: unknown) => Effect.Effect<string, McpFailed | McpInputInvalid>
    /** Starts a server once on this host, lists its tools and stops it (`pynchy doctor`). */
    readonly inspect: (spec: McpServerSpec) => Effect.Effect<ReadonlyArray<InspectedTool>, McpFailed>
  }
}

const failedFrom = (server: string, e: unknown) =>
  e instanceof McpProblem && Schema.is(McpFailureCode)(e.code)
    ? new McpFailed({ server, code: e.code, reason: e.message, ...(e.stderrTail !== undefined ? { stderr: e.stderrTail } : {}) })
    : new McpFailed({ server, code: "mcp_call_failed", reason: `MCP server '${server}' failed` })

/** A server that died is logged with the tail of its stderr. */
const logDeath = (f: McpFailed) =>
  f.stderr === undefined ? Effect.void : Effect.logWarning("MCP server is gone").pipe(Effect.annotateLogs({ server: f.server, code: f.code, stderr: f.stderr }))

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

/** A host server's own folder, made (or tightened) to 0700 before each start. */
export const serverDirOf = (dataDir: string, server: string) => path.join(dataDir, "mcp", server)

const ownDir = (dir: string) =>
  Effect.sync(() => {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 })
    fs.chmodSync(dir, 0o700)
  })

/** Starts a server with its deadline; the deadline aborts the start, which stops the process. */
const start = (spec: McpServerSpec, cwd: string) =>
  Effect.flatMap(Effect.zipRight(ownDir(cwd), envOf(spec)), (env) =>
    Effect.tryPromise({ try: (signal) => connectMcp(launchOf(spec, env), cwd, process.execPath, signal), catch: (e) => failedFrom(spec.name, e) }).pipe(
      Effect.tapError(logDeath),
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
    const cwdOf = (spec: McpServerSpec) => serverDirOf(dataDir, spec.name)
    const live = new Map<string, Live>()
    // One validator, built on the first server that starts; each distinct schema is compiled once.
    let ajv: Ajv | undefined
    const compiled = new Map<string, Either.Either<InputCheck, string>>()
    const checksOf = (c: McpConnection): Live => ({
      connection: c,
      checks: new Map(c.tools.map((t) => {
        const key = JSON.stringify(t.inputSchema)
        let check = compiled.get(key)
        if (check === undefined) compiled.set(key, check = compileInput(ajv ??= newValidator(), t.inputSchema))
        return [t.name, check] as const
      }))
    })
    const locks = new Map(yield* Effect.forEach(all.filter((d) => d.spec.where === "host"), (d) => Effect.map(Effect.makeSemaphore(1), (s) => [d.spec.name, s] as const)))
    yield* Effect.addFinalizer(() => Effect.promise(() => Promise.all([...live.values()].map((l) => l.connection.close()))))

    /** The live connection of a host server with its tools' checks, started when there is none (one start at a time per server). */
    const connection = (spec: McpServerSpec) =>
      locks.get(spec.name)!.withPermits(1)(Effect.suspend(() => {
        const current = live.get(spec.name)
        if (current !== undefined && !current.connection.closed()) return Effect.succeed(current)
        return Effect.interruptible(start(spec, cwdOf(spec))).pipe(
          Effect.map(checksOf),
          Effect.tap((l) => Effect.sync(() => live.set(spec.name, l))),
          Effect.tap((l) => Effect.forEach([...l.checks].filter(([, c]) => Either.isLeft(c)), ([tool]) =>
            Effect.logWarning("MCP tool not offered: its input schema does not compile").pipe(Effect.annotateLogs({ server: spec.name, tool: tool.slice(0, 64) }))))
        )
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
          Effect.map(({ checks, connection: c }) => {
            for (const t of c.tools) if (Either.isRight(checks.get(t.name)!)) tools.push({ name: t.offered, action: `mcp:${spec.name}/${t.name}`, description: t.description, inputSchema: { ...t.inputSchema } })
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

    /** The live server after `input` passed the tool's check. */
    const checked = Effect.fnUntraced(function* (target: McpToolTarget, input: unknown) {
      const { spec, tool } = target
      const l = yield* connection(spec)
      const check = l.checks.get(tool)
      if (check === undefined) return yield* new McpFailed({ server: spec.name, code: "mcp_unknown_tool", reason: `MCP server '${spec.name}' offers no tool '${tool.slice(0, 64)}'` })
      const problems = Either.match(check, { onLeft: (p) => [`input: the tool's input schema does not compile (${p})`], onRight: (c) => c(input) })
      if (problems.length > 0) return yield* new McpInputInvalid({ server: spec.name, tool, problems: problems.slice(0, 10) })
      return l.connection
    })

    const check = Effect.fn("McpHost.check")(function* (target: McpToolTarget, input: unknown) {
      yield* checked(target, input)
    })

    const call = Effect.fn("McpHost.call")(function* (target: McpToolTarget, input: unknown) {
      const { spec, tool } = target
      const c = yield* checked(target, input)
      const answer = yield* Effect.tryPromise({ try: (signal) => c.call(tool, input, signal), catch: (e) => failedFrom(spec.name, e) }).pipe(
        Effect.tapError(logDeath),
        Effect.timeoutFail({
          duration: Duration.seconds(spec.timeoutSeconds),
          onTimeout: () => new McpFailed({ server: spec.name, code: "mcp_call_timeout", reason: `MCP server '${spec.name}' did not answer within ${spec.timeoutSeconds}s` })
        }),
        // A server that hung is stopped: the next use starts it afresh.
        Effect.tapError((f) => (f.code === "mcp_call_timeout" ? Effect.promise(() => c.close()).pipe(Effect.zipRight(Effect.sync(() => live.get(spec.name)?.connection === c && live.delete(spec.name)))) : Effect.void))
      )
      if (!answer.ok) return yield* new McpFailed({ server: spec.name, code: "mcp_tool_error", reason: answer.text.slice(0, 2_000) })
      return answer.text
    })

    const inspect = (spec: McpServerSpec) =>
      Effect.acquireUseRelease(
        Effect.interruptible(start(spec, cwdOf(spec))),
        (c) => {
          const { checks } = checksOf(c)
          return Effect.succeed(c.tools.map((t): InspectedTool => {
            const problem = Either.getLeft(checks.get(t.name)!)
            return { name: t.name, offered: t.offered, description: t.description, ...(Option.isSome(problem) ? { schemaProblem: problem.value } : {}) }
          }))
        },
        (c) => Effect.promise(() => c.close())
      )

    return McpHost.of({ servers: all, forTurn, route, check, call, inspect })
  })

  static readonly layer = Layer.scoped(McpHost, McpHost.make)

  /** No servers (hosts and tests without MCP). */
  static readonly none: McpHost.Service = {
    servers: [],
    forTurn: () => Effect.succeed({ tools: [], launches: [], unavailable: [] }),
    route: () => Option.none(),
    check: (target) => Effect.fail(new McpFailed({ server: target.spec.name, code: "mcp_start_failed", reason: "no MCP servers on this host" })),
    call: (target) => Effect.fail(new McpFailed({ server: target.spec.name, code: "mcp_start_failed", reason: "no MCP servers on this host" })),
    inspect: (spec) => Effect.fail(new McpFailed({ server: spec.name, code: "mcp_start_failed", reason: "no MCP servers on this host" }))
  }
}
