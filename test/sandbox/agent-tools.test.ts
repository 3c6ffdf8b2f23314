/**
 * The acceptance path through the whole host (ingest → turn → bwrap runner → gateway → scripted
 * upstream → delivery): a streamed `bash` tool call writes a file that is then in the workspace
 * folder on the host, its result reaches the model without the provider key, and the reply is
 * delivered once.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Layer } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { makeTestHost } from "../../layers/test.js"
import { decodeConfig } from "../../src/config/HostConfig.js"
import { ConversationId } from "../../src/domain/ids.js"
import { GatewayConfig } from "../../src/config/gateway.js"
import { Gateway, GatewaySettings } from "../../src/gateway/Gateway.js"
import { Ingest } from "../../src/pipeline/Ingest.js"
import { openaiStream } from "../agent/sse.js"
import { tempDir } from "../support/db.js"
import { awaitSettled, sentLines } from "../support/host.js"
import { skipWithout } from "../support/system.js"
import { scriptedUpstream } from "../gateway/support.js"
import { awaitTurnEnd, runnerBundle, sandboxExecutor } from "./support.js"

const CANARY = `sk-agent-host-canary-${Date.now().toString(36)}`
const KEY_ENV = "PYNCHY_AGENT_HOST_TEST_KEY"
const conv = ConversationId.make("test:room")

describe.skipIf(skipWithout("bwrap", "apt-get install bubblewrap"))("agent tools through the host", () => {
  it.scopedLive("a bash tool call writes a file that is then in the workspace folder on the host; the key never reaches the model's tool result", () =>
    Effect.gen(function* () {
      process.env[KEY_ENV] = CANARY
      yield* Effect.addFinalizer(() => Effect.sync(() => delete process.env[KEY_ENV]))
      const upstream = yield* scriptedUpstream((_hit, res, n) =>
        n === 1
          ? openaiStream(res, ["Writing it."], [{ id: "call_1", name: "bash", input: { command: "echo hi > note.txt && env && cat /proc/self/environ" } }])
          : openaiStream(res, ["Wrote ", "note.txt."])
      )
      const dir = tempDir()
      const cfg = Either.getOrThrow(decodeConfig({
        dataDir: dir,
        routes: [{ connection: "test", place: "*", workspace: "main" }],
        connections: { test: { kind: "recording", file: "sent.jsonl", idempotent: true } },
        providers: [{ name: "up", kind: "openai-compatible", baseUrl: upstream.url, apiKeyEnv: KEY_ENV, models: ["tiny"] }],
        workspaces: [{ id: "main", agentCore: "openai" }]
      }, "test config"))
      const gateway = Layer.provide(Gateway.layer, GatewaySettings.layerFrom({ dataDir: tempDir("pynchy-gw-"), providers: cfg.providers, gateway: GatewayConfig.make({}) }))
      const runnerPath = yield* Effect.promise(runnerBundle)
      const ctx = yield* Layer.build(makeTestHost(cfg, { executor: sandboxExecutor(cfg, { runnerPath }, { gateway }) }))
      const { ingest } = yield* Effect.provide(Ingest, ctx)
      yield* ingest({ connection: "test", place: "room", providerEventId: "e1", sender: "u", text: "write hi into note.txt" })
      const turn = yield* awaitTurnEnd(conv).pipe(Effect.provide(ctx))
      assert.strictEqual(turn.status, "completed", turn.error ?? "")
      yield* awaitSettled(conv, 1).pipe(Effect.provide(ctx))
      assert.deepStrictEqual(sentLines(dir).map((l) => l.text), ["Wrote note.txt."])
      const workspace = path.join(dir, "workspaces", "main")
      assert.strictEqual(fs.readFileSync(path.join(workspace, "note.txt"), "utf8"), "hi\n")
      assert.isTrue(upstream.hits.every((h) => h.body.stream === true))
      const toolResult = upstream.hits[1]!.body.messages.find((m: any) => m.role === "tool")
      assert.include(toolResult.content, "PYNCHY_WORKSPACE_DIR")
      assert.notInclude(toolResult.content, CANARY)
      assert.notInclude(toolResult.content, "PYNCHY_TURN_TOKEN")
    }))
})
