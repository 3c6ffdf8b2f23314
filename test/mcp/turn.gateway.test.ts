/**
 * The acceptance turn: a workspace that lists a sandbox MCP server and a host MCP server, a whole
 * turn through the real stack (bwrap, the runner, the gateway, a scripted upstream). The
 * upstream's tool calls to `<server>__<tool>` return each server's answer: the sandbox one from
 * inside the sandbox (no network, /workspace), the host one from this host, with its env.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Layer } from "effect"
import * as os from "node:os"
import * as path from "node:path"
import { makeTestHost } from "../../layers/test.js"
import { GatewayConfig } from "../../src/config/gateway.js"
import { decodeConfig } from "../../src/config/HostConfig.js"
import { ConversationId } from "../../src/domain/ids.js"
import { Gateway, GatewaySettings } from "../../src/gateway/Gateway.js"
import { Ingest } from "../../src/pipeline/Ingest.js"
import { tempDir } from "../support/db.js"
import { awaitSettled, sentLines } from "../support/host.js"
import { skipWithout } from "../support/system.js"
import { chatAnswer, json, scriptedUpstream } from "../gateway/support.js"
import { awaitTurnEnd, runnerBundle, sandboxExecutor } from "../sandbox/support.js"
import { copyInto, ECHO_SERVER, IN_SANDBOX } from "./fixture.js"

const KEY_ENV = "PYNCHY_MCP_TEST_KEY"
const conv = ConversationId.make("test:room")

const calls = [
  { id: "c1", type: "function", function: { name: "notes__echo", arguments: "{\"text\":\"from the sandbox\"}" } },
  { id: "c2", type: "function", function: { name: "notes__where", arguments: "{}" } },
  { id: "c3", type: "function", function: { name: "desk__echo", arguments: "{\"text\":\"from the host\"}" } },
  { id: "c4", type: "function", function: { name: "desk__where", arguments: "{}" } }
]

describe.skipIf(skipWithout("bwrap", "apt-get install bubblewrap"))("a turn with MCP servers in the sandbox and on the host", () => {
  it.scopedLive("the scripted model's calls to <server>__<tool> return each server's answer", () =>
    Effect.gen(function* () {
      process.env[KEY_ENV] = "sk-mcp-test"
      process.env.PYNCHY_MCP_FIXTURE_SECRET = "host-only-value"
      yield* Effect.addFinalizer(() => Effect.sync(() => {
        delete process.env[KEY_ENV]
        delete process.env.PYNCHY_MCP_FIXTURE_SECRET
      }))
      const upstream = yield* scriptedUpstream((hit, res, n) => {
        if (n === 1) {
          json(res, 200, JSON.stringify({
            id: "c1", object: "chat.completion", model: "tiny",
            choices: [{ index: 0, finish_reason: "tool_calls", message: { role: "assistant", content: null, tool_calls: calls } }],
            usage: { prompt_tokens: 5, completion_tokens: 5, total_tokens: 10 }
          }))
        } else {
          const results = hit.body.messages.filter((m: any) => m.role === "tool").map((m: any) => m.content)
          json(res, 200, chatAnswer("tiny").replace("\"hello\"", JSON.stringify(results.join("\n"))))
        }
      })
      const dir = tempDir()
      copyInto(path.join(dir, "workspaces", "main"))
      const cfg = Either.getOrThrow(decodeConfig({
        dataDir: dir,
        routes: [{ connection: "test", place: "*", workspace: "main" }],
        connections: { test: { kind: "recording", file: "sent.jsonl", idempotent: true } },
        providers: [{ name: "up", kind: "openai-compatible", baseUrl: upstream.url, apiKeyEnv: KEY_ENV, models: ["tiny"] }],
        mcpServers: [
          { name: "notes", command: "node", args: [IN_SANDBOX, "ok"], where: "sandbox" },
          { name: "desk", command: "node", args: [ECHO_SERVER, "ok"], where: "host", env: ["PYNCHY_MCP_FIXTURE_SECRET"], tools: ["echo", "where"] }
        ],
        workspaces: [{ id: "main", agentCore: "openai", tools: [], mcpServers: ["notes", "desk"] }]
      }, "test config"))
      const gateway = Layer.provide(Gateway.layer, GatewaySettings.layerFrom({ dataDir: tempDir("pynchy-gw-"), providers: cfg.providers, gateway: GatewayConfig.make({}) }))
      const runnerPath = yield* Effect.promise(runnerBundle)
      const ctx = yield* Layer.build(makeTestHost(cfg, { executor: sandboxExecutor(cfg, { runnerPath }, { gateway }) }))
      const { ingest } = yield* Effect.provide(Ingest, ctx)
      yield* ingest({ connection: "test", place: "room", providerEventId: "e1", sender: "u", text: "use your tools" })
      const turn = yield* awaitTurnEnd(conv).pipe(Effect.provide(ctx))
      assert.strictEqual(turn.status, "completed", turn.error ?? "")
      yield* awaitSettled(conv, 1).pipe(Effect.provide(ctx))

      const offered = upstream.hits[0]!.body.tools.map((t: any) => t.function.name)
      assert.includeMembers(offered, ["notes__echo", "notes__add", "notes__where", "notes__fail", "desk__echo", "desk__where"])
      assert.notInclude(offered, "desk__add")
      const [sandboxEcho, sandboxWhere, hostEcho, hostWhere] = sentLines(dir)[0]!.text.split("\n")
      assert.strictEqual(sandboxEcho, "echo: from the sandbox")
      const inside = JSON.parse(sandboxWhere!)
      assert.deepStrictEqual([inside.hostname, inside.cwd, inside.network, inside.secret], ["agent", "/workspace", "unreachable", null])
      assert.strictEqual(hostEcho, "echo: from the host")
      const outside = JSON.parse(hostWhere!)
      assert.deepStrictEqual([outside.hostname, outside.secret], [os.hostname(), "host-only-value"])
    }))
})
