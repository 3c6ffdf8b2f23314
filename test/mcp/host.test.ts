/**
 * Host MCP servers (the stdio fixture, started by the official SDK client on this host): their
 * tools are offered as `<server>__<tool>` and called through HostActions' policy; one process
 * serves every call and stops with the layer; a server that crashes, hangs past its deadline
 * (TestClock) or does not start is a refusal the model reads; `high` risk asks a human; two
 * sources of one name, or a workspace listing an unknown server, are startup faults.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Exit, Fiber, Layer, Scope, TestClock } from "effect"
import * as os from "node:os"
import { Approvals } from "../../src/actions/Approvals.js"
import { buildHostActions } from "../../src/actions/HostActions.js"
import { decodeConfig, HostConfig } from "../../src/config/HostConfig.js"
import { WorkspaceId } from "../../src/domain/ids.js"
import { Workspace } from "../../src/domain/workspace.js"
import { McpHost } from "../../src/mcp/McpHost.js"
import { BUILTINS, type BuiltinPlugin } from "../../src/builtins/list.js"
import { PluginRegistry } from "../../src/plugins/PluginRegistry.js"
import { tempDir } from "../support/db.js"
import { eventually } from "../support/eventually.js"
import { ECHO_SERVER } from "./fixture.js"

const server = (name: string, mode: string, extra: Record<string, unknown> = {}) => ({ name, command: "node", args: [ECHO_SERVER, mode], where: "host", ...extra })

const hostWith = (mcpServers: ReadonlyArray<unknown>, workspaces: ReadonlyArray<unknown>, plugins: ReadonlyArray<BuiltinPlugin> = []) => {
  const config = Either.getOrThrow(decodeConfig({ dataDir: tempDir(), mcpServers, workspaces: workspaces.length > 0 ? workspaces : [{ id: "main" }] }, "test"))
  const base = Layer.provideMerge(PluginRegistry.layerWith({ root: os.tmpdir(), builtins: [...BUILTINS, ...plugins] }), HostConfig.layerFrom(config))
  return Layer.provideMerge(McpHost.layer, base)
}

const ws = (servers: ReadonlyArray<string>) => Workspace.make({ id: WorkspaceId.make("main"), mcpServers: servers })
const ctx = { turnId: 1, conversationId: "test:room" }

/** HostActions over no handlers, with the host's MCP servers and no one to ask for approval. */
const actionsOf = Effect.flatMap(McpHost, (mcp) => buildHostActions([], [], { mcp }).pipe(Effect.provide(Approvals.layerNone)))

const refusal = <A>(effect: Effect.Effect<A, { readonly code: string }>) => Effect.flip(effect).pipe(Effect.map((e) => e.code))

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

describe("MCP servers on the host", () => {
  it.scopedLive("tools offered with their schemas, called under policy through one shared process that stops with the layer", () =>
    Effect.gen(function* () {
      process.env.PYNCHY_MCP_FIXTURE_SECRET = "s3cret"
      yield* Effect.addFinalizer(() => Effect.sync(() => delete process.env.PYNCHY_MCP_FIXTURE_SECRET))
      const plugin: BuiltinPlugin = {
        name: "mcp-plugin",
        load: async () => ({ name: "mcp-plugin", mcpServerSpec: () => ({ name: "sandboxed", command: "node", args: ["/workspace/s.mjs"], where: "sandbox", env: ["PYNCHY_MCP_FIXTURE_SECRET"], tools: ["echo"] }) })
      }
      const scope = yield* Scope.make()
      const layer = hostWith([server("notes", "ok", { env: ["PYNCHY_MCP_FIXTURE_SECRET", "PYNCHY_MCP_UNSET"], tools: ["echo", "where", "fail"] })], [{ id: "main", mcpServers: ["notes", "sandboxed"] }], [plugin])
      const context = yield* Layer.buildWithScope(layer, scope)
      const { mcp, actions } = yield* Effect.all({ mcp: McpHost, actions: actionsOf }).pipe(Effect.provide(context))
      assert.deepStrictEqual(mcp.servers.map((s) => `${s.spec.name}:${s.spec.where}:${s.source}`), ["notes:host:config", "sandboxed:sandbox:plugin 'mcp-plugin'"])

      const turn = yield* mcp.forTurn(ws(["notes", "sandboxed"]))
      assert.deepStrictEqual(turn.tools.map((t) => t.name), ["notes__echo", "notes__where", "notes__fail"])
      assert.deepStrictEqual(turn.tools[0]!.inputSchema, { type: "object", properties: { text: { type: "string" } }, required: ["text"] })
      // The sandbox server goes to the runner, with the values of the env names it asked for.
      assert.deepStrictEqual(turn.launches, [{ name: "sandboxed", command: "node", args: ["/workspace/s.mjs"], env: { PYNCHY_MCP_FIXTURE_SECRET: "s3cret" }, tools: ["echo"], timeoutSeconds: 30 }])
      assert.deepStrictEqual(turn.unavailable, [])

      assert.strictEqual(yield* actions.call(ws(["notes"]), "notes__echo", { text: "hi" }, ctx), "echo: hi")
      const first = JSON.parse((yield* actions.call(ws(["notes"]), "notes__where", {}, ctx)) as string)
      const second = JSON.parse((yield* actions.call(ws(["notes"]), "notes__where", {}, ctx)) as string)
      assert.strictEqual(first.secret, "s3cret")
      assert.strictEqual(first.pid, second.pid)
      assert.isTrue(alive(first.pid))
      // A tool error is the server's words; a tool the allowlist leaves out, or a workspace that does not list the server, gets nothing.
      const failed = yield* Effect.flip(actions.call(ws(["notes"]), "notes__fail", {}, ctx))
      assert.deepStrictEqual([failed.code, failed.reason], ["mcp_tool_error", "the fixture always fails this one"])
      assert.strictEqual(yield* refusal(actions.call(ws(["notes"]), "notes__add", { a: 1, b: 2 }, ctx)), "mcp_unknown_tool")
      assert.strictEqual(yield* refusal(actions.call(ws([]), "notes__echo", { text: "x" }, ctx)), "unknown_action")

      yield* Scope.close(scope, Exit.void)
      yield* eventually(() => (alive(first.pid) ? undefined : true), { label: "the host server stopped with its layer" })
    }))

  it.scopedLive("a server that crashes on a call is a refusal, and the next call starts it again; one that never starts is named, not fatal", () =>
    Effect.gen(function* () {
      const marker = `${tempDir()}/crashed`
      const context = yield* Layer.build(hostWith([{ ...server("crashy", "crash-once"), args: [ECHO_SERVER, "crash-once", marker] }, server("gone", "dead")], []))
      const { mcp, actions } = yield* Effect.all({ mcp: McpHost, actions: actionsOf }).pipe(Effect.provide(context))
      const turn = yield* mcp.forTurn(ws(["crashy", "gone", "nobody"]))
      assert.deepStrictEqual(turn.tools.map((t) => t.name), ["crashy__echo", "crashy__add", "crashy__where", "crashy__fail"])
      assert.deepStrictEqual(turn.unavailable.map((u) => u.server), ["gone", "nobody"])
      assert.strictEqual(turn.unavailable[1]!.code, "mcp_unknown_server")
      assert.include(["mcp_server_exited", "mcp_start_failed"], turn.unavailable[0]!.code)
      assert.strictEqual(yield* refusal(actions.call(ws(["crashy"]), "crashy__echo", { text: "x" }, ctx)), "mcp_server_exited")
      assert.strictEqual(yield* actions.call(ws(["crashy"]), "crashy__echo", { text: "again" }, ctx), "echo: again")
      assert.include(["mcp_server_exited", "mcp_start_failed"], yield* refusal(actions.call(ws(["gone"]), "gone__echo", {}, ctx)))
    }))

  it.scoped("a call past the server's deadline is refused with mcp_call_timeout (TestClock)", () =>
    Effect.gen(function* () {
      const context = yield* Layer.build(hostWith([server("stuck", "hang", { timeoutSeconds: 5 })], []))
      const { mcp, actions } = yield* Effect.all({ mcp: McpHost, actions: actionsOf }).pipe(Effect.provide(context))
      // Started (real I/O, no clock involved) before the call, so the only deadline pending is the call's.
      assert.strictEqual((yield* mcp.forTurn(ws(["stuck"]))).tools.length, 4)
      const call = yield* Effect.fork(refusal(actions.call(ws(["stuck"]), "stuck__echo", { text: "x" }, ctx)))
      while ((yield* TestClock.sleeps()).length === 0) yield* Effect.yieldNow()
      yield* TestClock.adjust("5 seconds")
      assert.strictEqual(yield* Fiber.join(call), "mcp_call_timeout")
    }))

  it.scopedLive("a high-risk server's calls need a human; with no one to ask they are refused before the server is called", () =>
    Effect.gen(function* () {
      const context = yield* Layer.build(hostWith([server("danger", "crash", { risk: "high" })], []))
      const actions = yield* Effect.provide(actionsOf, context)
      // The crash fixture exits on any call: a refusal for approval proves it was never called.
      const refused = yield* Effect.flip(actions.call(ws(["danger"]), "danger__echo", { text: "x" }, ctx))
      assert.deepStrictEqual([refused.code, refused.action], ["approval_required", "danger.echo"])
    }))

  it.effect("a name declared twice, or a workspace listing an unknown server, is a startup fault naming the sources", () =>
    Effect.gen(function* () {
      const plugin: BuiltinPlugin = { name: "dup", load: async () => ({ name: "dup", mcpServerSpec: () => ({ name: "notes", command: "node", where: "sandbox" }) }) }
      const fault = yield* Effect.flip(Layer.build(hostWith([server("notes", "ok")], [{ id: "main", mcpServers: ["notes", "ghost"] }], [plugin])).pipe(Effect.scoped))
      assert.strictEqual(fault._tag, "McpServersInvalid")
      const problems = (fault as { problems: ReadonlyArray<string> }).problems
      assert.deepStrictEqual(problems, [
        "MCP server 'notes' is declared twice: by config and by plugin 'dup'",
        "workspaces.main.mcpServers: no MCP server named 'ghost' (declare it under mcpServers: or install the plugin that contributes it)"
      ])
    }))
})
