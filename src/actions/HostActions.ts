/**
 * Host actions as agent tools. A workspace sees only the service handlers its `actions` lists;
 * each call is checked against the handler's input schema (a plugin's is compiled when the host
 * actions are built, and one that does not compile fails startup; the host's own, on first call)
 * and the evidence an action spec of the same id demands, then passes policy: a per-workspace
 * rate limit, and a single-use human approval for `high` risk. Every refusal, error and timeout
 * fails closed: the agent gets a refusal, the host keeps running.
 */
import { Clock, Context, Duration, Effect, Either, Layer, Option, Schema } from "effect"
import { ConversationId, TurnId } from "../domain/ids.js"
import { McpFailureCode } from "../domain/mcp.js"
import type { Workspace } from "../domain/workspace.js"
import { type McpFailed, McpHost, type McpInputInvalid, type McpToolTarget } from "../mcp/McpHost.js"
import type { ActionSpec, RiskTier, ServiceHandler } from "../contracts/plugin.js"
import { PluginRegistry } from "../plugins/PluginRegistry.js"
import { toolNameOf, type ToolSpec } from "../protocol/ipc.js"
import { AgentTasks } from "../schedules/AgentTasks.js"
import { Approvals } from "./Approvals.js"
import { type ActionSchemaInvalid, checksOnFirstUse, compileHandlers, type OwnedHandler } from "./validate.js"

export const RefusalCode = Schema.Literal(
  "unknown_action",
  "not_enabled",
  "invalid_input",
  "approval_required",
  "rate_limited",
  "action_timeout",
  "action_failed",
  ...McpFailureCode.literals
)
export type RefusalCode = typeof RefusalCode.Type

/** A call that did not run or did not finish: the code the agent sees and a reason without input values. */
export class ActionRefused extends Schema.TaggedError<ActionRefused>()("ActionRefused", {
  action: Schema.String,
  code: RefusalCode,
  reason: Schema.String
}) {
  override get message() {
    return `action ${this.action} refused (${this.code}): ${this.reason}`
  }
}

export interface ActionCallContext {
  readonly turnId: number
  readonly conversationId: string
}

export declare namespace HostActions {
  export interface Options {
    /** Calls per workspace per minute (default 30). */
    readonly ratePerMinute?: number
    /** A handler's deadline (default 30 s); a late handler is a refusal. */
    readonly timeout?: Duration.DurationInput
    /** How long a `high` risk call waits for a human's approval (default 120 s); then it is refused. */
    readonly approvalTimeout?: Duration.DurationInput
    /** The host's own handlers (the agent tasks), offered to the workspaces `offered` accepts without listing them in `actions`. */
    readonly offered?: ReadonlyArray<{ readonly handler: ServiceHandler; readonly offered: (workspace: Workspace) => boolean }>
    /** The host MCP servers, whose tools pass the same policy (default: none). */
    readonly mcp?: McpHost.Service
  }

  export interface Service {
    /** The tools a workspace's agent is offered (its enabled actions that have a handler). */
    readonly toolsFor: (workspace: Workspace) => ReadonlyArray<ToolSpec>
    /** Runs a tool call by tool name (or action id), or a host MCP server's tool, under policy; the output is JSON-safe. */
    readonly call: (workspace: Workspace, tool: string, input: unknown, context: ActionCallContext) => Effect.Effect<unknown, ActionRefused>
  }
}

const jsonSafe = (value: unknown): unknown => {
  if (value === undefined) return null
  try {
    return JSON.parse(JSON.stringify(value))
  } catch {
    return null
  }
}

const decodeConversation = Schema.decodeUnknownOption(ConversationId)
const decodeTurn = Schema.decodeUnknownOption(TurnId)

/** Runs a handler however it answers (value, Promise, Effect); any failure becomes `failed`, without its content. */
const invoke = (handler: ServiceHandler, input: unknown, context: ActionCallContext, failed: () => ActionRefused) =>
  Effect.suspend((): Effect.Effect<unknown, ActionRefused> => {
    const result: unknown = handler.handler(input, context)
    if (Effect.isEffect(result)) return Effect.mapError(result as Effect.Effect<unknown, unknown>, failed)
    if (result !== null && typeof result === "object" && typeof (result as PromiseLike<unknown>).then === "function") {
      return Effect.tryPromise({ try: () => result as PromiseLike<unknown>, catch: failed })
    }
    return Effect.succeed(result)
  })

const owned = (h: ServiceHandler | OwnedHandler): OwnedHandler => ("value" in h && "plugin" in h ? h : { plugin: "(unknown)", value: h })

/**
 * The host actions over these handlers (registry contributions name their plugin in a startup
 * fault; bare handlers do not). Fails with every input schema that does not compile.
 */
export const buildHostActions = (
  contributed: ReadonlyArray<ServiceHandler | OwnedHandler>,
  specs: ReadonlyArray<ActionSpec>,
  options: HostActions.Options = {}
): Effect.Effect<HostActions.Service, ActionSchemaInvalid, Approvals> =>
  Effect.gen(function* () {
    const hostHandlers = options.offered ?? []
    const pluginHandlers = contributed.map(owned)
    const offeredTo = new Map(hostHandlers.map((o) => [o.handler.name, o.offered]))
    const enabled = (workspace: Workspace, name: string) => workspace.actions.includes(name) || (offeredTo.get(name)?.(workspace) ?? false)
    // Plugins' schemas compile now, so a bad one stops startup naming its plugin; the host's own on first call.
    const pluginChecks = yield* Either.match(compileHandlers(pluginHandlers), { onLeft: Effect.fail, onRight: Effect.succeed })
    const checks = new Map([...pluginChecks, ...checksOnFirstUse(hostHandlers.map((o) => o.handler))])
    const handlers = [...pluginHandlers.map((h) => h.value), ...hostHandlers.map((o) => o.handler)]
    // A host that cannot ask anyone provides Approvals.layerNone: high-risk calls are refused outright.
    const approvals = yield* Approvals
    const byId = new Map(handlers.map((h) => [h.name, h]))
    const byTool = new Map(handlers.map((h) => [toolNameOf(h.name), h]))
    const specOf = new Map(specs.map((s) => [s.id, s]))
    const rate = options.ratePerMinute ?? 30
    const timeout = Duration.decode(options.timeout ?? Duration.seconds(30))
    const approvalTimeout = Duration.decode(options.approvalTimeout ?? Duration.seconds(120))
    const windows = new Map<string, Array<number>>()
    const mcp = options.mcp ?? McpHost.none

    const toolsFor = (workspace: Workspace): ReadonlyArray<ToolSpec> =>
      [...workspace.actions, ...hostHandlers.filter((o) => o.offered(workspace) && !workspace.actions.includes(o.handler.name)).map((o) => o.handler.name)].flatMap((id) => {
        const h = byId.get(id)
        return h === undefined ? [] : [{ name: toolNameOf(h.name), action: h.name, description: h.description, inputSchema: { ...h.inputSchema } }]
      })

    const admit = (workspace: string, now: number): boolean => {
      const recent = (windows.get(workspace) ?? []).filter((t) => t > now - 60_000)
      if (recent.length >= rate) {
        windows.set(workspace, recent)
        return false
      }
      recent.push(now)
      windows.set(workspace, recent)
      return true
    }

    /** Policy once a call is valid: a per-workspace rate limit, then a human's approval for `high` risk. */
    const admitted = Effect.fnUntraced(function* (
      workspace: Workspace,
      action: string,
      risk: RiskTier,
      input: unknown,
      context: ActionCallContext,
      refuse: (code: RefusalCode, reason: string) => ActionRefused
    ) {
      // Rate first: a call that would be refused anyway does not bother a human.
      if (!admit(workspace.id, yield* Clock.currentTimeMillis)) return yield* refuse("rate_limited", `more than ${rate} calls per minute`)
      if (risk !== "high") return
      const conversationId = decodeConversation(context.conversationId)
      const cannotAsk = "high-risk actions need human approval, which this host cannot ask for"
      if (Option.isNone(conversationId)) return yield* refuse("approval_required", cannotAsk)
      const verdict = yield* approvals.request({
        conversationId: conversationId.value,
        turnId: Option.getOrNull(decodeTurn(context.turnId)),
        action,
        input,
        risk,
        deadline: approvalTimeout
      })
      if (verdict === "unavailable") return yield* refuse("approval_required", cannotAsk)
      if (verdict === "denied") return yield* refuse("approval_required", "not approved")
      if (verdict !== "approved") return yield* refuse("approval_required", "approval timed out")
    })

    /**
     * A host MCP server's tool: its input checked against the tool's own schema, policy at the
     * server's risk tier, then the call (checked again by McpHost, which never sends what fails) under its deadline.
     */
    const callMcp = Effect.fnUntraced(function* (workspace: Workspace, target: McpToolTarget, input: unknown, context: ActionCallContext) {
      const action = `${target.spec.name}.${target.tool.slice(0, 64)}`
      const refuse = (code: RefusalCode, reason: string) => new ActionRefused({ action, code, reason })
      const refusal = (f: McpFailed | McpInputInvalid) => (f._tag === "McpInputInvalid" ? refuse("invalid_input", f.problems.join("; ")) : refuse(f.code, f.reason))
      yield* mcp.check(target, input).pipe(Effect.mapError(refusal))
      yield* admitted(workspace, action, target.spec.risk, input, context, refuse)
      const output = yield* mcp.call(target, input).pipe(Effect.mapError(refusal))
      yield* Effect.logInfo("MCP tool ran").pipe(Effect.annotateLogs({ action, workspace: workspace.id, turn: context.turnId }))
      return output
    })

    const call = Effect.fn("HostActions.call")(function* (workspace: Workspace, tool: string, input: unknown, context: ActionCallContext) {
      const handler = byTool.get(tool) ?? byId.get(tool)
      const action = handler?.name ?? tool.slice(0, 200)
      const refuse = (code: RefusalCode, reason: string) => new ActionRefused({ action, code, reason })
      if (handler === undefined) {
        const target = mcp.route(workspace, tool)
        if (Option.isSome(target)) return yield* callMcp(workspace, target.value, input, context)
        return yield* refuse("unknown_action", "no such host action")
      }
      if (!enabled(workspace, handler.name)) return yield* refuse("not_enabled", `not enabled for workspace '${workspace.id}'`)
      // Every handler has a check: the map was built from the same list, or startup failed.
      const problems = checks.get(handler.name)!(input)
      const evidence = specOf.get(handler.name)?.evidence ?? []
      for (const field of evidence) {
        const v = input !== null && typeof input === "object" ? (input as Record<string, unknown>)[field] : undefined
        if (v === undefined || v === null || v === "") problems.push(`input.${field}: evidence required`)
      }
      if (problems.length > 0) return yield* refuse("invalid_input", problems.slice(0, 10).join("; "))
      yield* admitted(workspace, handler.name, handler.risk, input, context, refuse)
      const output = yield* invoke(handler, input, context, () => refuse("action_failed", "the handler failed")).pipe(
        Effect.timeoutFail({ duration: timeout, onTimeout: () => refuse("action_timeout", `no answer within ${Duration.format(timeout)}`) }),
        Effect.catchAllDefect(() => Effect.fail(refuse("action_failed", "the handler crashed")))
      )
      yield* Effect.logInfo("host action ran").pipe(Effect.annotateLogs({ action: handler.name, workspace: workspace.id, turn: context.turnId }))
      return jsonSafe(output)
    })

    return HostActions.of({ toolsFor, call })
  })

/**
 * `buildHostActions` over bare handlers (tests, a custom host): a schema that does not compile is
 * a defect carrying the same ActionSchemaInvalid.
 */
export const makeHostActions = (
  contributed: ReadonlyArray<ServiceHandler | OwnedHandler>,
  specs: ReadonlyArray<ActionSpec>,
  options: HostActions.Options = {}
): Effect.Effect<HostActions.Service, never, Approvals> => Effect.orDie(buildHostActions(contributed, specs, options))

export class HostActions extends Context.Tag("pynchy/HostActions")<HostActions, HostActions.Service>() {
  static readonly make = (options: HostActions.Options = {}) =>
    Effect.gen(function* () {
      const registry = yield* PluginRegistry
      const tasks = yield* AgentTasks
      const mcp = yield* McpHost
      return yield* buildHostActions(registry.serviceHandlers, registry.actionSpecs.map((c) => c.value), { offered: tasks.handlers, mcp, ...options })
    })

  static readonly layer = Layer.effect(HostActions, HostActions.make())
}
