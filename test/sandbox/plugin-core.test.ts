/**
 * A third-party agent core (examples/agent-core-shout, loaded from `plugins.modules` as a user
 * would) runs inside the sandbox: the runner imports its module, mounted read-only, and calls it
 * with the core context. It reaches the model only through the gateway socket and writes into the
 * workspace with a sandbox tool. A module without a default export function fails the turn with
 * a code that says so. Both sandbox runtimes that run here: bwrap and process.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Layer } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { makeTestHost } from "../../layers/test.js"
import { decodeConfig } from "../../src/config/HostConfig.js"
import { GatewayConfig } from "../../src/config/gateway.js"
import type { PynchyConfig } from "../../src/config/schema.js"
import { ConversationId } from "../../src/domain/ids.js"
import { Gateway, GatewaySettings } from "../../src/gateway/Gateway.js"
import { Ingest } from "../../src/pipeline/Ingest.js"
import { hostPackageRoot } from "../../src/plugins/paths.js"
import { tempDir } from "../support/db.js"
import { awaitSettled, sentLines } from "../support/host.js"
import { skipWithout } from "../support/system.js"
import { json, scriptedUpstream } from "../gateway/support.js"
import { awaitTurnEnd, runnerBundle, sandboxExecutor } from "./support.js"

const EXAMPLE = path.join(hostPackageRoot(), "examples", "agent-core-shout", "plugin.js")
const KEY_ENV = "PYNCHY_PLUGIN_CORE_TEST_KEY"
const conv = ConversationId.make("test:room")
const msg = (id: string, text: string) => ({ connection: "test", place: "room", providerEventId: id, sender: "u", text })

const config = (dir: string, runtime: string, extra: Record<string, unknown>): PynchyConfig =>
  Either.getOrThrow(decodeConfig({
    dataDir: dir,
    containerRuntime: runtime,
    routes: [{ connection: "test", place: "*", workspace: "main" }],
    connections: { test: { kind: "recording", file: "sent.jsonl", idempotent: true } },
    ...extra
  }, "test config"))

const bwrapMissing = skipWithout("bwrap", "apt-get install bubblewrap")

describe("a plugin's agent core runs in the sandbox", () => {
  for (const runtime of ["bwrap", "process"] as const) {
    it.scopedLive.skipIf(runtime === "bwrap" && bwrapMissing)(`${runtime}: the example core asks the model through the gateway, writes into the workspace and replies`, () =>
      Effect.gen(function* () {
        process.env[KEY_ENV] = "sk-plugin-core-test"
        yield* Effect.addFinalizer(() => Effect.sync(() => delete process.env[KEY_ENV]))
        const upstream = yield* scriptedUpstream((hit, res) => {
          const asked = hit.body.messages.at(-1).content
          json(res, 200, JSON.stringify({
            id: "c1", object: "chat.completion", model: "tiny",
            choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content: `you said: ${asked}` } }],
            usage: { prompt_tokens: 5, completion_tokens: 5, total_tokens: 10 }
          }))
        })
        const dir = tempDir()
        const cfg = config(dir, runtime, {
          plugins: { modules: [EXAMPLE] },
          providers: [{ name: "up", kind: "openai-compatible", baseUrl: upstream.url, apiKeyEnv: KEY_ENV, models: ["tiny"] }],
          workspaces: [{ id: "main", instructions: "Answer plainly.", agentCore: "shout" }]
        })
        const gateway = Layer.provide(Gateway.layer, GatewaySettings.layerFrom({ dataDir: tempDir("pynchy-gw-"), providers: cfg.providers, gateway: GatewayConfig.make({}) }))
        const runnerPath = yield* Effect.promise(runnerBundle)
        const ctx = yield* Layer.build(makeTestHost(cfg, { executor: sandboxExecutor(cfg, { runnerPath }, { gateway }) }))
        const { ingest } = yield* Effect.provide(Ingest, ctx)
        yield* ingest(msg("e1", "hello there"))
        const turn = yield* awaitTurnEnd(conv).pipe(Effect.provide(ctx))
        assert.strictEqual(turn.status, "completed", turn.error ?? "")
        yield* awaitSettled(conv, 1).pipe(Effect.provide(ctx))
        assert.deepStrictEqual(sentLines(dir).map((l) => l.text), ["YOU SAID: HELLO THERE"])
        // The core's request went through the gateway (which added the key) with the system prompt built for it.
        assert.strictEqual(upstream.hits.length, 1)
        assert.strictEqual(upstream.hits[0]!.headers.authorization, "Bearer sk-plugin-core-test")
        assert.include(upstream.hits[0]!.body.messages[0].content, "Answer plainly.")
        // The sandbox tool wrote into the workspace folder.
        assert.strictEqual(fs.readFileSync(path.join(dir, "workspaces", "main", "last-shout.txt"), "utf8"), "you said: hello there")
      }))
  }

  it.scopedLive.skipIf(bwrapMissing)("a module whose default export is not a function fails the turn with invalid_agent_core, not a retry", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const core = path.join(dir, "not-a-core.mjs")
      fs.writeFileSync(core, "export default 42\n", { mode: 0o644 })
      const plugin = path.join(dir, "plugin.mjs")
      fs.writeFileSync(plugin, `export default { name: "broken-core", agentCore: () => ({ name: "broken", module: ${JSON.stringify(core)}, api: "none" }) }\n`)
      const cfg = config(dir, "bwrap", { plugins: { modules: [plugin] }, workspaces: [{ id: "main", agentCore: "broken" }] })
      const runnerPath = yield* Effect.promise(runnerBundle)
      const ctx = yield* Layer.build(makeTestHost(cfg, { executor: sandboxExecutor(cfg, { runnerPath }) }))
      const { ingest } = yield* Effect.provide(Ingest, ctx)
      yield* ingest(msg("e1", "hi"))
      const turn = yield* awaitTurnEnd(conv).pipe(Effect.provide(ctx))
      assert.strictEqual(turn.status, "failed")
      assert.strictEqual(turn.attempts, 1)
      assert.include(turn.error ?? "", "invalid_agent_core")
    }))
})
