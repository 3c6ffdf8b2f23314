/**
 * A hostile agent against a host MCP server (a real server on the official SDK, started by the
 * host, that trusts its client and records every call it receives): input that breaks the tool's
 * own `inputSchema` (a path where a pattern allows a name, a property the schema forbids, an array
 * for a string) is refused naming the field and never reaches the server, and so is every call to a
 * tool whose schema does not compile (it is not offered either); the server runs in a
 * folder of its own (`<dataDir>/mcp/<server>/`, 0700), not the data dir, and its environment holds
 * only what docs/plugins/hooks.md lists (PATH, HOME and its declared `env`), not SHELL or TERM.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, HashMap, Layer, Logger } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Approvals } from "../../src/actions/Approvals.js"
import { buildHostActions } from "../../src/actions/HostActions.js"
import { decodeConfig, HostConfig } from "../../src/config/HostConfig.js"
import { WorkspaceId } from "../../src/domain/ids.js"
import { Workspace } from "../../src/domain/workspace.js"
import { McpHost } from "../../src/mcp/McpHost.js"
import { BUILTINS } from "../../src/builtins/list.js"
import { PluginRegistry } from "../../src/plugins/PluginRegistry.js"
import { tempDir } from "../support/db.js"

const RECORDING_SERVER = path.resolve(import.meta.dirname, "../fixtures/mcp/recording-server.mjs")
const ECHO_SERVER = path.resolve(import.meta.dirname, "../fixtures/mcp/echo-server.mjs")

const hostOf = (dataDir: string, mcpServers: ReadonlyArray<unknown>) => {
  const config = Either.getOrThrow(decodeConfig({ dataDir, mcpServers, workspaces: [{ id: "main", mcpServers: ["files"] }] }, "test"))
  return Layer.provideMerge(McpHost.layer, Layer.provideMerge(PluginRegistry.layerWith({ root: os.tmpdir(), builtins: BUILTINS }), HostConfig.layerFrom(config)))
}

const ws = Workspace.make({ id: WorkspaceId.make("main"), mcpServers: ["files"] })
const ctx = { turnId: 1, conversationId: "test:room" }

/** The env names a test sets for the length of a scope (the host's own, which a server must not inherit). */
const withEnv = (vars: Record<string, string>) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const before = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]))
      Object.assign(process.env, vars)
      return before
    }),
    (before) => Effect.sync(() => {
      for (const [k, v] of Object.entries(before)) {
        if (v === undefined) delete process.env[k]
        else process.env[k] = v
      }
    })
  )

describe("host MCP servers against a hostile agent", () => {
  it.scopedLive("input that breaks the tool's schema is refused naming the field and never reaches the server; the server runs in its own folder with only the documented env", () =>
    Effect.gen(function* () {
      yield* withEnv({ SHELL: "/bin/bash", TERM: "xterm-256color", PYNCHY_MCP_FIXTURE_SECRET: "s3cret" })
      const dataDir = tempDir()
      const record = path.join(tempDir(), "received.jsonl")
      fs.writeFileSync(record, "")
      const layer = hostOf(dataDir, [{ name: "files", command: "node", args: [RECORDING_SERVER, record], where: "host", env: ["PYNCHY_MCP_FIXTURE_SECRET"] }])
      const { actions, mcp } = yield* Effect.flatMap(McpHost, (mcp) => Effect.map(buildHostActions([], [], { mcp }), (actions) => ({ actions, mcp }))).pipe(Effect.provide(Layer.merge(Approvals.layerNone, layer)))

      // A tool whose schema does not compile is not offered, and a call to it is refused all the same.
      assert.deepStrictEqual((yield* mcp.forTurn(ws)).tools.map((t) => t.name), ["files__list_dir", "files__whoami"])
      const vague = yield* Effect.flip(actions.call(ws, "files__vague", { dir: "x" }, ctx))
      assert.strictEqual(vague.code, "invalid_input")
      assert.include(vague.reason, "input: the tool's input schema does not compile (strict mode: unknown keyword: \"safePath\")")

      const escape = yield* Effect.flip(actions.call(ws, "files__list_dir", { dir: "../../../../root/.ssh", extra: "x" }, ctx))
      assert.strictEqual(escape.code, "invalid_input")
      assert.include(escape.reason, "input.dir: must match pattern")
      assert.include(escape.reason, "input.extra: not allowed (additionalProperties)")
      // The reason names the rule, never the value the agent sent.
      assert.notInclude(escape.reason, "root/.ssh")
      const wrongType = yield* Effect.flip(actions.call(ws, "files__list_dir", { dir: ["a"] }, ctx))
      assert.deepStrictEqual([wrongType.code, wrongType.reason], ["invalid_input", "input.dir: must be string (type)"])
      const notObject = yield* Effect.flip(actions.call(ws, "files__list_dir", ["a"], ctx))
      assert.strictEqual(notObject.code, "invalid_input")

      assert.strictEqual(yield* actions.call(ws, "files__list_dir", { dir: "notes" }, ctx), "listed notes")
      const seen = JSON.parse((yield* actions.call(ws, "files__whoami", {}, ctx)) as string)
      const received = fs.readFileSync(record, "utf8").trim().split("\n").map((l) => JSON.parse(l))
      assert.deepStrictEqual(received, [{ name: "list_dir", arguments: { dir: "notes" } }, { name: "whoami", arguments: {} }])

      const own = path.join(dataDir, "mcp", "files")
      assert.deepStrictEqual({ cwd: seen.cwd, mode: seen.mode }, { cwd: fs.realpathSync(own), mode: "700" })
      assert.deepStrictEqual(seen.env, ["HOME", "PATH", "PYNCHY_MCP_FIXTURE_SECRET"])
    }))

  it.scopedLive("a host server that dies is logged with the redacted tail of its stderr; the agent gets the code, not the host's log", () =>
    Effect.gen(function* () {
      yield* withEnv({ PYNCHY_MCP_FIXTURE_SECRET: "hunter2-host-secret" })
      const logged: Array<{ message: unknown; stderr: unknown }> = []
      const capture = Logger.replace(Logger.defaultLogger, Logger.make(({ annotations, message }) => {
        logged.push({ message, stderr: HashMap.get(annotations, "stderr").pipe((o) => (o._tag === "Some" ? o.value : undefined)) })
      }))
      const layer = hostOf(tempDir(), [{ name: "files", command: "node", args: [ECHO_SERVER, "crash-loud"], where: "host", env: ["PYNCHY_MCP_FIXTURE_SECRET"] }])
      const actions = yield* Effect.flatMap(McpHost, (mcp) => buildHostActions([], [], { mcp })).pipe(Effect.provide(Layer.merge(Approvals.layerNone, layer)))
      const died = yield* Effect.flip(actions.call(ws, "files__echo", { text: "x" }, ctx).pipe(Effect.provide(capture)))
      assert.deepStrictEqual([died.code, died.reason], ["mcp_server_exited", "MCP server 'files' exited"])
      const line = logged.find((l) => typeof l.stderr === "string")
      assert.isDefined(line, "a log line with the server's stderr")
      assert.include(String(line!.stderr), "fixture crashed: cannot open the notes db (secret [redacted], key [redacted])")
      assert.notInclude(JSON.stringify(logged), "hunter2-host-secret")
    }))
})
