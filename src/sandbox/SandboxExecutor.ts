/**
 * Runs each turn in a sandbox: prepare the host-only folder (turn spec, IPC socket, liveness) and
 * the agent-writable session folder, mint the turn's gateway token, start the runner in the
 * selected container runtime, serve its IPC (replies become deliveries, tool calls become host
 * actions under policy), and on scope close kill the sandbox, revoke the token and record the
 * outcome in the host-only folder.
 *
 * Trust boundary: the session and workspace folders are the agent's. The host never writes a
 * record there, and never reads one back from there to decide anything (docs/sandbox.md).
 */
import { Clock, Context, Effect, Layer, Option, Schedule, Schema } from "effect"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { builtinCoreInfo } from "../protocol/agent-cores.js"
import { notInstalledReason, optionalPluginOfCore } from "../plugins/first-party.js"
import { HostActions } from "../actions/HostActions.js"
import { HostConfig } from "../config/HostConfig.js"
import { ExecutorId } from "../domain/ids.js"
import { ClaudeCodeSettings, type Workspace } from "../domain/workspace.js"
import { EventBus } from "../events/EventBus.js"
import { Gateway } from "../gateway/Gateway.js"
import { AgentExecutor, ExecutorLiveness, TurnFailed, type TurnInput } from "../pipeline/AgentExecutor.js"
import { McpHost } from "../mcp/McpHost.js"
import { ConversationContext } from "../pipeline/ConversationContext.js"
import { hostPackageRoot } from "../plugins/paths.js"
import { PluginRegistry } from "../plugins/PluginRegistry.js"
import type { TurnSpec } from "../protocol/ipc.js"
import { currentTraceparent } from "../telemetry/trace-context.js"
import { listenIpc } from "./IpcServer.js"
import type { SandboxHandle, SandboxRuntime, SandboxSpec } from "./runtime.js"
import { chooseRuntime } from "./select.js"
import { unsafeWorkspaceFolder, workspaceDirOf } from "../config/workspace-folder.js"
import { coreHomeOf, ensurePrivateDir, hostDirOf, prepareWorkspace, runtimeDirOf, sandboxesDir, sessionDirOf, sessionsDir } from "./folders.js"
import { sweepSessions } from "./retention.js"
import { skillsFor, workspaceSkillsDir } from "./skills.js"
import { serveRunner } from "./serve-runner.js"
import { makeWorkspaceAudit } from "./workspace-audit.js"

export declare namespace SandboxExecutor {
  export interface Options {
    /** The runner bundle; default `<package>/dist/runner.mjs` (scripts/build.mjs). */
    readonly runnerPath?: string
    /** Container runtimes by name; default: the plugins' `containerRuntime` contributions. */
    readonly runtimes?: ReadonlyArray<SandboxRuntime>
    /** The core for workspaces without `agentCore`; default: by provider (anthropic, else openai). */
    readonly defaultCore?: string
    readonly maxToolRounds?: number
  }
}

const SandboxRecord = Schema.parseJson(Schema.Struct({ runtime: Schema.String, id: Schema.String }))

const SID = /^sandbox:([a-f0-9]{12})$/

/** A unix socket path must fit in 108 bytes; a deep data dir falls back to a private temp folder, removed with the turn. */
const socketPathFor = (hostDir: string, sid: string, name: "ipc" | "gateway") => {
  const inHost = path.join(hostDir, `${name}.sock`)
  if (Buffer.byteLength(inHost) < 100) return Effect.succeed(inHost)
  return Effect.map(
    Effect.acquireRelease(
      Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), `pynchy-${name}-${sid}-`))),
      (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
    ),
    (dir) => path.join(dir, `${name}.sock`)
  )
}

const claudeCodeSpec = (s: ClaudeCodeSettings) => ({ permissionMode: s.permissionMode, maxTurns: s.maxTurns, allowedTools: [...s.allowedTools] })

const failed = (code: string, reason: string, retryable: boolean) => new TurnFailed({ code, reason, retryable })

const isHandle = (u: unknown): u is SandboxHandle =>
  u !== null && typeof u === "object" && typeof (u as SandboxHandle).id === "string" && typeof (u as SandboxHandle).exited?.then === "function"

export const make = (options: SandboxExecutor.Options = {}) =>
  Effect.gen(function* () {
    const host = yield* HostConfig
    const registry = yield* PluginRegistry
    const memory = yield* ConversationContext
    const gateway = yield* Gateway
    const actions = yield* HostActions
    const mcp = yield* McpHost
    const bus = yield* EventBus
    const runtimes = options.runtimes ?? registry.containerRuntimes.map((c) => c.value as SandboxRuntime)
    const runnerPath = options.runnerPath ?? path.join(hostPackageRoot(), "dist", "runner.mjs")
    /** What the turn needs of a core: its gateway API and, for a plugin's core, its module (real path: the launcher opens mounts without following links). */
    const resolveCore = (name: string): { readonly api: "chat" | "messages" | "none"; readonly module?: string; readonly packages?: string } | undefined => {
      const core = registry.agentCores.find((c) => c.name === name)?.value
      if (core === undefined) return undefined
      if ("builtin" in core) return builtinCoreInfo(name)
      return { api: core.api ?? "chat", module: fs.realpathSync(core.module), ...(core.packages !== undefined ? { packages: fs.realpathSync(core.packages) } : {}) }
    }
    const providers = host.config.providers
    const dataDir = host.dataDir

    const coreFor = (w: Workspace) =>
      w.agentCore ?? options.defaultCore ?? (providers[0]?.kind === "anthropic" ? "anthropic" : "openai")
    const modelFor = (w: Workspace): string | null => w.model ?? providers.find((p) => p.models.length > 0)?.models[0] ?? null
    /** The model a core asks for: the claude-code core may have its own (`claudeCode.model`). */
    const coreModelFor = (w: Workspace, core: string): string | null => (core === "claude-code" ? w.claudeCode?.model : undefined) ?? modelFor(w)

    // Written whole and renamed into place: a reader (isAlive, recovery in the next host) never
    // sees a record that exists but is still empty.
    const record = (hostDir: string, name: string, value: unknown) =>
      Effect.sync(() => {
        const partial = path.join(hostDir, `.${name}.partial`)
        fs.writeFileSync(partial, JSON.stringify(value), { mode: 0o600 })
        fs.renameSync(partial, path.join(hostDir, name))
      })

    const afterTurn = makeWorkspaceAudit(host.config.limits.workspaceMaxMb)

    const execute = Effect.fn("SandboxExecutor.execute")(function* (input: TurnInput) {
      const m = SID.exec(input.executor)
      if (m === null) return yield* failed("bad_executor_id", "not a sandbox executor id", false)
      const sid = m[1]!
      const w = input.workspace
      const runtime = yield* chooseRuntime(w.sandbox.runtime ?? host.config.containerRuntime, runtimes)
      const core = coreFor(w)
      const entry = yield* Effect.try({ try: () => resolveCore(core), catch: () => failed("agent_core_missing", `the module of agent core '${core}' is gone`, false) })
      if (entry === undefined) {
        const optional = optionalPluginOfCore(core)
        return yield* optional !== undefined
          ? failed("agent_core_not_installed", notInstalledReason(core, optional), false)
          : failed("unknown_agent_core", `no agent core named '${core}'`, false)
      }
      if (!fs.existsSync(runnerPath)) return yield* failed("runner_missing", "the runner bundle is missing (npm run build)", false)

      const sessionDir = sessionDirOf(dataDir, sid)
      const hostDir = hostDirOf(dataDir, sid)
      const workspaceDir = workspaceDirOf(dataDir, w)
      const unsafe = unsafeWorkspaceFolder(dataDir, workspaceDir)
      if (unsafe !== undefined) return yield* failed("workspace_folder_unsafe", `workspace '${w.id}' cannot use that folder: ${unsafe}`, false)
      const aside = yield* Effect.sync(() => {
        ensurePrivateDir(sandboxesDir(dataDir))
        ensurePrivateDir(sessionsDir(dataDir))
        ensurePrivateDir(runtimeDirOf(dataDir))
        fs.mkdirSync(hostDir, { mode: 0o700 })
        fs.mkdirSync(sessionDir, { mode: 0o700 })
        return prepareWorkspace(workspaceDir)
      })
      if (aside !== undefined) yield* Effect.logWarning("workspace skills folder was not a folder: moved aside").pipe(Effect.annotateLogs({ workspace: w.id, movedTo: aside }))
      // After the sandbox is gone (finalizers run in reverse): no setuid or setgid file outlives
      // the turn, and a workspace past its size cap earns the conversation a notice.
      yield* Effect.addFinalizer(() => afterTurn(input, workspaceDir))
      const skills = yield* skillsFor(w, registry.skills.map((s) => s.value), workspaceDir)
      const model = entry.api === "none" ? null : coreModelFor(w, core)
      const context = yield* memory.build(input, model)
      // A plugin core's durable folder: one per conversation, core and context start, so `/new` starts it empty.
      const homeDir = entry.module === undefined ? undefined : coreHomeOf(dataDir, input.conversation.id, core, context.contextStart)
      if (homeDir !== undefined) yield* Effect.sync(() => fs.mkdirSync(homeDir, { recursive: true, mode: 0o700 }))
      // This span's context goes to the runner and, with the token, to the gateway's upstream calls.
      const traceparent = yield* currentTraceparent
      const servers = yield* mcp.forTurn(w)
      const turn: TurnSpec = {
        version: 2,
        turnId: input.turn.id,
        conversationId: input.conversation.id,
        workspace: { id: w.id, instructions: w.instructions },
        summary: context.summary,
        history: context.history,
        messages: input.messages.map((msg) => ({ id: msg.id, sender: msg.sender, text: msg.text, createdAt: msg.createdAt })),
        skills: skills.map((s) => ({ name: s.name, description: s.description, tier: s.tier })),
        // Host MCP servers' tools, then the host actions (docs/plugins/hooks.md, "MCP tool servers").
        tools: [...servers.tools, ...actions.toolsFor(w)],
        sandboxTools: [...w.tools],
        ...(servers.launches.length > 0 ? { mcpServers: servers.launches } : {}),
        ...(servers.unavailable.length > 0 ? { unavailableServers: servers.unavailable } : {}),
        core,
        model,
        api: entry.api === "messages" ? "messages" : "chat",
        maxToolRounds: options.maxToolRounds ?? 8,
        ...(core === "claude-code" ? { claudeCode: claudeCodeSpec(w.claudeCode ?? ClaudeCodeSettings.make({})) } : {}),
        ...(traceparent !== null ? { traceparent } : {})
      }
      yield* record(hostDir, "turn.json", turn)

      const now = yield* Clock.currentTimeMillis
      const token = model !== null
        ? Option.some(yield* Effect.acquireRelease(
          gateway.mintToken({
            workspace: w.id,
            conversationId: input.conversation.id,
            turnId: input.turn.id,
            models: [model],
            expiresAt: now + w.sandbox.timeoutSeconds * 1000,
            traceparent,
            ...(input.tokenBudget !== undefined ? { tokenBudget: input.tokenBudget } : {})
          }),
          (minted) => minted.revoke
        ))
        : Option.none()

      const ipcSocket = yield* socketPathFor(hostDir, sid, "ipc")
      // The token goes to the runner over IPC, never through the sandbox's arguments or environment.
      const ipc = yield* listenIpc(ipcSocket, { token: Option.match(token, { onNone: () => null, onSome: (t) => t.token }) }).pipe(Effect.mapError((e) => failed("ipc_failed", `cannot listen for the runner (${e.reason})`, true)))
      // The sandbox's own gateway socket: what it holds open counts against its share alone, never
      // against other sandboxes or the shared listeners (docs/sandbox.md, "Threat model").
      const gatewaySocket = Option.isSome(token) ? yield* socketPathFor(hostDir, sid, "gateway") : null
      if (gatewaySocket !== null) {
        yield* gateway.listenForSandbox(gatewaySocket).pipe(Effect.mapError((e) => failed("gateway_listen_failed", `cannot open the sandbox's gateway socket (${e.reason})`, true)))
      }
      const spec: SandboxSpec = {
        sandboxId: sid,
        workspaceDir,
        workspaceReadOnly: [path.relative(workspaceDir, workspaceSkillsDir(workspaceDir))],
        sessionDir,
        hostDir,
        turnFile: path.join(hostDir, "turn.json"),
        skills: skills.map((s) => ({ name: s.name, path: s.path })),
        ipcSocket,
        gatewaySocket,
        entry: runnerPath,
        coreModule: entry.module,
        corePackages: entry.packages,
        homeDir,
        runtimeDir: runtimeDirOf(dataDir),
        env: {},
        memoryMb: w.sandbox.memoryMb,
        maxProcesses: w.sandbox.maxProcesses
      }
      const handle = yield* Effect.acquireRelease(
        Effect.tryPromise({ try: () => Promise.resolve(runtime.start(spec)), catch: () => failed("sandbox_start_failed", `the ${runtime.name} runtime could not start the sandbox`, true) }).pipe(
          Effect.filterOrFail(isHandle, () => failed("sandbox_start_failed", `the ${runtime.name} runtime returned no handle`, false))
        ),
        // Killed, then waited for (bounded): once the turn's scope has closed, its sandbox is gone.
        (h) =>
          Effect.promise(() => Promise.resolve(runtime.kill(h.id)).catch(() => undefined)).pipe(
            Effect.zipRight(Effect.promise(() => h.exited).pipe(Effect.timeout("5 seconds"), Effect.ignore))
          )
      )
      yield* record(hostDir, "sandbox.json", { runtime: runtime.name, id: handle.id })
      const ids = { turnId: input.turn.id, conversationId: input.conversation.id, executor: input.executor, runtime: runtime.name }
      yield* bus.publish({ type: "sandbox.started", ...ids, workspace: w.id })
      const exited = Effect.promise(() => handle.exited)
      const started = yield* Clock.currentTimeMillis
      // A turn over a batch may answer each of its messages (a host catching up after an outage).
      const maxReplies = Math.max(host.config.limits.maxRepliesPerTurn, input.messages.length)
      const outcome = yield* Effect.either(serveRunner({ input, ipc, exited, actions, maxReplies }))
      const malformed = ipc.malformed()
      yield* record(hostDir, "outcome.json", {
        turn: input.turn.id,
        runtime: runtime.name,
        core,
        ms: (yield* Clock.currentTimeMillis) - started,
        ...(malformed > 0 ? { malformedLines: malformed } : {}),
        ...(outcome._tag === "Right" ? { status: "done", replies: outcome.right } : { status: "failed", code: outcome.left.code })
      })
      yield* bus.publish({
        type: "sandbox.exited",
        ...ids,
        status: outcome._tag === "Right" ? "done" : "failed",
        code: outcome._tag === "Right" ? null : outcome.left.code,
        durationMs: (yield* Clock.currentTimeMillis) - started
      })
      if (outcome._tag === "Left") return yield* outcome.left
    }, Effect.scoped)

    const recordOf = (executor: ExecutorId) => {
      const m = SID.exec(executor)
      return m === null
        ? Effect.succeedNone
        // Host-only: an agent can neither write nor link this record.
        : Effect.try(() => fs.readFileSync(path.join(hostDirOf(dataDir, m[1]!), "sandbox.json"), "utf8")).pipe(
          Effect.flatMap(Schema.decodeUnknown(SandboxRecord)),
          Effect.option
        )
    }

    const isAlive = (executor: ExecutorId) =>
      Effect.flatMap(recordOf(executor), Option.match({
        onNone: () => Effect.succeed(false),
        onSome: (r) => {
          const runtime = runtimes.find((x) => x.name === r.runtime)
          return runtime === undefined ? Effect.succeed(false) : Effect.promise(() => Promise.resolve(runtime.isAlive(r.id)).then((a) => a === true, () => false))
        }
      }))

    const kill = (executor: ExecutorId) =>
      Effect.flatMap(recordOf(executor), Option.match({
        onNone: () => Effect.void,
        onSome: (r) => {
          const runtime = runtimes.find((x) => x.name === r.runtime)
          return runtime === undefined ? Effect.void : Effect.promise(() => Promise.resolve(runtime.kill(r.id)).catch(() => undefined))
        }
      }))

    // Retention runs now and then every few hours, for as long as the executor lives.
    yield* Effect.forkScoped(
      sweepSessions(dataDir, host.config.limits.sessionRetentionDays, (sid) => isAlive(ExecutorId.make(`sandbox:${sid}`))).pipe(
        Effect.catchAllDefect((d) => Effect.logWarning("session retention sweep failed", d)),
        Effect.repeat(Schedule.spaced("6 hours"))
      )
    )

    return {
      executor: AgentExecutor.of({
        allocate: () => Effect.sync(() => ExecutorId.make(`sandbox:${randomBytes(6).toString("hex")}`)),
        execute,
        // The IPC listener died with the previous host, so a surviving sandbox cannot be re-attached: end it and run again.
        adopt: (input) =>
          Effect.zipRight(kill(input.executor), failed("not_adoptable", "a sandbox cannot be re-attached after a host restart", true))
      }),
      liveness: ExecutorLiveness.of({ isAlive })
    }
  })

/** AgentExecutor + ExecutorLiveness over sandboxes; needs HostConfig, PluginRegistry, ConversationContext, Gateway, HostActions and McpHost. */
export const layer = (options: SandboxExecutor.Options = {}) =>
  Layer.scopedContext(
    Effect.map(make(options), ({ executor, liveness }) => Context.make(AgentExecutor, executor).pipe(Context.add(ExecutorLiveness, liveness)))
  )
