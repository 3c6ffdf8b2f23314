/**
 * The claude-code agent core (plugins/claude-code, loaded as a user would after installing it):
 * Claude Code's native binary runs inside the bwrap sandbox with no network, reaching only the
 * gateway socket with the turn token, against the project's scripted Anthropic-compatible
 * upstream through the real gateway. A scripted tool_use makes it run Bash (the file lands in the
 * workspace folder) and call host actions over the MCP bridge (the host's policy refuses a bad
 * input and runs a good one); the next turn resumes the same Claude session (the upstream sees the
 * first exchange) and after `/new` starts a fresh one; the provider key is nowhere the agent could read or write, nor the token in
 * the conversation's folder. Skips (with the install command) where the plugin is not installed.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Layer } from "effect"
import * as fs from "node:fs"
import type * as http from "node:http"
import * as path from "node:path"
import { makeTestHost } from "../../layers/test.js"
import { decodeConfig, HostConfig } from "../../src/config/HostConfig.js"
import type { PynchyConfig } from "../../src/config/schema.js"
import { ConversationId } from "../../src/domain/ids.js"
import { Gateway, GatewaySettings } from "../../src/gateway/Gateway.js"
import { Ingest } from "../../src/pipeline/Ingest.js"
import { BUILTINS } from "../../src/builtins/list.js"
import { installCommand, isInstalled, OPTIONAL_PLUGINS } from "../../src/plugins/first-party.js"
import { hostPackageRoot } from "../../src/plugins/paths.js"
import { PluginRegistry } from "../../src/plugins/PluginRegistry.js"
import { tempDir } from "../support/db.js"
import { awaitSettled, sentLines } from "../support/host.js"
import { skipWithout } from "../support/system.js"
import { type Hit, scriptedUpstream } from "../gateway/support.js"
import { awaitTurnEnd, runnerBundle, sandboxExecutor } from "./support.js"

const PLUGIN = OPTIONAL_PLUGINS.find((p) => p.name === "claude-code")!
const PLUGIN_DIR = path.join(hostPackageRoot(), PLUGIN.folder)
const CANARY = "sk-ant-canary-claude-code-7f3a9c"
const KEY_ENV = "PYNCHY_CLAUDE_CODE_TEST_KEY"
const conv = ConversationId.make("test:room")
const msg = (id: string, text: string) => ({ connection: "test", place: "room", providerEventId: id, sender: "u", text })

const pluginMissing = (() => {
  if (isInstalled(hostPackageRoot(), PLUGIN)) return false
  if (process.env.PYNCHY_REQUIRE_SYSTEM === "1") throw new Error(`the claude-code plugin is required (PYNCHY_REQUIRE_SYSTEM=1) but not installed: ${installCommand(PLUGIN)}`)
  console.warn(`skipping: the claude-code plugin is not installed (${installCommand(PLUGIN)})`)
  return true
})()
const bwrapMissing = skipWithout("bwrap", "apt-get install bubblewrap")

/** One Anthropic message as a server-sent event stream: text, or one tool_use. */
const sse = (res: http.ServerResponse, content: { text: string } | { tool: string; input: unknown; id: string }) => {
  res.writeHead(200, { "content-type": "text/event-stream" })
  const ev = (event: string, data: unknown) => res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`)
  ev("message_start", { type: "message_start", message: { id: "msg_x", type: "message", role: "assistant", model: "claude-up", content: [], stop_reason: null, usage: { input_tokens: 20, output_tokens: 1 } } })
  if ("text" in content) {
    ev("content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } })
    ev("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: content.text } })
  } else {
    ev("content_block_start", { type: "content_block_start", index: 0, content_block: { type: "tool_use", id: content.id, name: content.tool, input: {} } })
    ev("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: JSON.stringify(content.input) } })
  }
  ev("content_block_stop", { type: "content_block_stop", index: 0 })
  ev("message_delta", { type: "message_delta", delta: { stop_reason: "text" in content ? "end_turn" : "tool_use" }, usage: { output_tokens: 5 } })
  ev("message_stop", { type: "message_stop" })
  res.end()
}

/** The text of a request's messages (strings and text/tool_result blocks), to see what it carries. */
const textOf = (hit: Hit): string => JSON.stringify(hit.body?.messages ?? [])
const toolResults = (hit: Hit): number => (textOf(hit).match(/"tool_result"/g) ?? []).length

const config = (dir: string, upstream: string, extra: Record<string, unknown> = {}): PynchyConfig =>
  Either.getOrThrow(decodeConfig({
    dataDir: dir,
    containerRuntime: "bwrap",
    routes: [{ connection: "test", place: "*", workspace: "main" }],
    connections: { test: { kind: "recording", file: "sent.jsonl", idempotent: true } },
    providers: [{ name: "ant", kind: "anthropic", baseUrl: upstream, apiKeyEnv: KEY_ENV }],
    gateway: { modelGroups: [{ name: "coder", deployments: [{ provider: "ant", model: "claude-up" }] }] },
    workspaces: [{ id: "main", instructions: "Answer plainly.", agentCore: "claude-code", model: "coder", actions: ["hello.greet"] }],
    ...extra
  }, "test config"))

/** Every file under `dir` (following nothing), for the canary search. */
const filesUnder = (dir: string): Array<string> =>
  fs.readdirSync(dir, { withFileTypes: true, recursive: true }).filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name))

describe("the claude-code agent core", () => {
  it.scopedLive.skipIf(pluginMissing || bwrapMissing)("runs Claude Code in bwrap through the gateway: Bash writes into the workspace, host actions go through policy, the next turn resumes", () =>
    Effect.gen(function* () {
      process.env[KEY_ENV] = CANARY
      yield* Effect.addFinalizer(() => Effect.sync(() => delete process.env[KEY_ENV]))
      const greeted: Array<string> = []
      const plugin = path.join(tempDir("pynchy-cc-plugin-"), "greet.mjs")
      fs.writeFileSync(plugin, `export default { name: "greeter", serviceHandler: () => [{ name: "hello.greet", description: "Greets someone by name", risk: "low",
        inputSchema: { type: "object", properties: { name: { type: "string", minLength: 1 } }, required: ["name"], additionalProperties: false },
        handler: async ({ name }) => { globalThis.__greeted?.push(name); return { text: "Hello, " + name + "!" } } }] }\n`)
      ;(globalThis as { __greeted?: Array<string> }).__greeted = greeted
      yield* Effect.addFinalizer(() => Effect.sync(() => delete (globalThis as { __greeted?: Array<string> }).__greeted))

      // Turn 1: Bash, then a host action with a bad input (refused by the host), then a good one, then the answer.
      // Turn 2: the answer, once the request carries the first exchange.
      const upstream = yield* scriptedUpstream((hit, res) => {
        const text = textOf(hit)
        if (!hit.path.startsWith("/v1/messages")) return sse(res, { text: "ok" })
        if (text.includes("what did I ask")) return sse(res, { text: text.includes("make the file") ? "You asked me to make the file." : "I do not know." })
        if (!text.includes("make the file")) return sse(res, { text: "ok" })
        switch (toolResults(hit)) {
          case 0:
            return sse(res, { tool: "Bash", id: "toolu_1", input: { command: "echo made-in-sandbox > made.txt; env > env.txt", description: "make the file" } })
          case 1:
            return sse(res, { tool: "mcp__pynchy__hello__greet", id: "toolu_2", input: { name: 5 } })
          case 2:
            return sse(res, { tool: "mcp__pynchy__hello__greet", id: "toolu_3", input: { name: "Ada" } })
          default:
            return sse(res, { text: "Made the file and greeted Ada." })
        }
      })
      const dir = tempDir()
      const cfg = config(dir, upstream.url, { plugins: { modules: [PLUGIN_DIR, plugin] } })
      const gateway = Layer.provide(Gateway.layer, GatewaySettings.layerFrom({ dataDir: tempDir("pynchy-gw-"), providers: cfg.providers, gateway: cfg.gateway }))
      const runnerPath = yield* Effect.promise(runnerBundle)
      const ctx = yield* Layer.build(makeTestHost(cfg, { executor: sandboxExecutor(cfg, { runnerPath }, { gateway }) }))
      const { ingest } = yield* Effect.provide(Ingest, ctx)

      yield* ingest(msg("e1", "please make the file"))
      const first = yield* awaitTurnEnd(conv).pipe(Effect.provide(ctx))
      assert.strictEqual(first.status, "completed", first.error ?? "")
      yield* awaitSettled(conv, 1).pipe(Effect.provide(ctx))
      assert.deepStrictEqual(sentLines(dir).map((l) => l.text), ["Made the file and greeted Ada."])

      const workspace = path.join(dir, "workspaces", "main")
      assert.strictEqual(fs.readFileSync(path.join(workspace, "made.txt"), "utf8"), "made-in-sandbox\n")
      const mains = upstream.hits.filter((h) => textOf(h).includes("make the file"))
      // The host's policy refused the bad input (its code came back as the tool result) and ran the good one once.
      assert.include(textOf(mains[2]!), "invalid_input")
      assert.include(textOf(mains[3]!), "Hello, Ada!")
      assert.deepStrictEqual(greeted, ["Ada"])
      // Every request came through the gateway: the provider key added there, the model group mapped.
      for (const h of upstream.hits) {
        assert.strictEqual(h.headers["x-api-key"], CANARY)
        assert.strictEqual(h.body.model, "claude-up")
        assert.include(String(h.headers["anthropic-beta"] ?? ""), "claude-code")
      }

      yield* ingest(msg("e2", "what did I ask you before?"))
      yield* awaitSettled(conv, 2).pipe(Effect.provide(ctx))
      assert.deepStrictEqual(sentLines(dir).map((l) => l.text).at(-1), "You asked me to make the file.")
      // Resumed, not retold: the second turn's request holds the first turn's tool calls.
      const resumed = upstream.hits.filter((h) => textOf(h).includes("what did I ask")).at(-1)!
      assert.include(textOf(resumed), "toolu_1")

      // After `/new` the conversation's folder is a fresh one: a new Claude session that knows nothing of before.
      yield* ingest(msg("e3", "/new"))
      yield* awaitSettled(conv, 3).pipe(Effect.provide(ctx))
      yield* ingest(msg("e4", "what did I ask you before, now?"))
      yield* awaitSettled(conv, 4).pipe(Effect.provide(ctx))
      assert.deepStrictEqual(sentLines(dir).map((l) => l.text).at(-1), "I do not know.")
      assert.notInclude(textOf(upstream.hits.at(-1)!), "toolu_1")
      assert.strictEqual(fs.readdirSync(fs.readdirSync(path.join(dir, "homes")).map((d) => path.join(dir, "homes", d))[0]!).length, 2)

      // The canary key is nowhere the agent reaches: not in the sandbox's environment (Bash's env.txt),
      // the workspace, the session folders or the conversation's durable folder, nor in any request body.
      assert.notInclude(fs.readFileSync(path.join(workspace, "env.txt"), "utf8"), CANARY)
      const agentFiles = [...filesUnder(workspace), ...filesUnder(path.join(dir, "sessions")), ...filesUnder(path.join(dir, "homes"))]
      assert.isAbove(filesUnder(path.join(dir, "homes")).length, 0)
      for (const f of agentFiles) assert.notInclude(fs.readFileSync(f, "utf8"), CANARY, f)
      for (const h of upstream.hits) assert.notInclude(JSON.stringify(h.body), CANARY)
      // The conversation's folder keeps the Claude session, never the turn token (tokens start pgw_).
      for (const f of filesUnder(path.join(dir, "homes"))) assert.notMatch(fs.readFileSync(f, "utf8"), /pgw_[A-Za-z0-9_-]{16,}/, f)
    }), { timeout: 240_000 })

  it.scopedLive("not installed: discovery skips it naming the install command, and a workspace selecting it fails with that command", () =>
    Effect.gen(function* () {
      // A pynchy folder where plugins/claude-code is present but its dependencies are not installed.
      const root = tempDir("pynchy-root-")
      fs.mkdirSync(path.join(root, PLUGIN.folder), { recursive: true })
      fs.copyFileSync(path.join(PLUGIN_DIR, "package.json"), path.join(root, PLUGIN.folder, "package.json"))
      const dir = tempDir()
      const cfg = Either.getOrThrow(decodeConfig({
        dataDir: dir,
        containerRuntime: "process",
        routes: [{ connection: "test", place: "*", workspace: "main" }],
        connections: { test: { kind: "recording", file: "sent.jsonl", idempotent: true } },
        workspaces: [{ id: "main", agentCore: "claude-code" }]
      }, "test config"))
      const registry = yield* Effect.provide(PluginRegistry, Layer.provide(PluginRegistry.layerWith({ root, builtins: BUILTINS }), HostConfig.layerFrom(cfg)))
      const skipped = registry.skipped.find((p) => p.name === "claude-code")
      assert.isDefined(skipped)
      assert.strictEqual(skipped!.hint, "npm ci --prefix plugins/claude-code")
      assert.isUndefined(registry.agentCores.find((c) => c.name === "claude-code"))

      const runnerPath = yield* Effect.promise(runnerBundle)
      const ctx = yield* Layer.build(makeTestHost(cfg, { executor: sandboxExecutor(cfg, { runnerPath }) }))
      const { ingest } = yield* Effect.provide(Ingest, ctx)
      yield* ingest(msg("e1", "hi"))
      const turn = yield* awaitTurnEnd(conv).pipe(Effect.provide(ctx))
      assert.strictEqual(turn.status, "failed")
      assert.strictEqual(turn.attempts, 1)
      assert.include(turn.error ?? "", "agent_core_not_installed")
      assert.include(turn.error ?? "", "npm ci --prefix plugins/claude-code")
    }))

  it.scopedLive.skipIf(pluginMissing)("installed: discovered from the pynchy folder like any installed plugin, its module and packages checked", () =>
    Effect.gen(function* () {
      const cfg = Either.getOrThrow(decodeConfig({ dataDir: tempDir() }, "test config"))
      const registry = yield* Effect.provide(PluginRegistry, Layer.provide(PluginRegistry.layerWith({ root: hostPackageRoot(), builtins: BUILTINS }), HostConfig.layerFrom(cfg)))
      const core = registry.agentCores.find((c) => c.name === "claude-code")?.value
      assert.isDefined(core)
      assert.deepInclude(core!, { module: path.join(PLUGIN_DIR, "core.mjs"), packages: path.join(PLUGIN_DIR, "node_modules"), api: "messages" })
      assert.isUndefined(registry.skipped.find((p) => p.name === "claude-code"))
    }))
})
