/**
 * Whole turns through the real stack with the gateway: the openai core calls a host action and
 * answers; the provider key (a canary) reaches the upstream through the gateway but never the
 * sandbox's files or transcript; an action that is not enabled is refused; without a provider
 * the agent answers with a notice.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Layer } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { makeTestHost } from "../../layers/test.js"
import { decodeConfig } from "../../src/config/HostConfig.js"
import type { PynchyConfig } from "../../src/config/schema.js"
import { ConversationId } from "../../src/domain/ids.js"
import { SANDBOX_TOOLS } from "../../src/protocol/sandbox-tools.js"
import { GatewayConfig } from "../../src/config/gateway.js"
import { Gateway, GatewaySettings } from "../../src/gateway/Gateway.js"
import { Ingest } from "../../src/pipeline/Ingest.js"
import type { BuiltinPlugin } from "../../src/builtins/list.js"
import { NO_PROVIDER_NOTICE } from "../../src/agent/cores/types.js"
import { tempDir } from "../support/db.js"
import { awaitSettled, sentLines } from "../support/host.js"
import { skipWithout } from "../support/system.js"
import { chatAnswer, json, scriptedUpstream } from "../gateway/support.js"
import { awaitTurnEnd, runnerBundle, sandboxExecutor } from "./support.js"

const CANARY = `sk-turn-canary-${Date.now().toString(36)}`
const KEY_ENV = "PYNCHY_SANDBOX_TEST_KEY"

const actionsPlugin: BuiltinPlugin = {
  name: "test-actions",
  load: async () => ({
    name: "test-actions",
    serviceHandler: () => [
      {
        name: "hello.greet",
        description: "Greets someone.",
        inputSchema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
        risk: "low",
        handler: async ({ name }: { name: string }) => ({ text: `Hello, ${name}!` })
      },
      { name: "db.drop", description: "Drops everything.", inputSchema: { type: "object" }, risk: "low", handler: () => "dropped" }
    ]
  })
}

const config = (dir: string, extra: Record<string, unknown>): PynchyConfig =>
  Either.getOrThrow(decodeConfig({
    dataDir: dir,
    routes: [{ connection: "test", place: "*", workspace: "main" }],
    connections: { test: { kind: "recording", file: "sent.jsonl", idempotent: true } },
    ...extra
  }, "test config"))

const msg = (id: string, text: string) => ({ connection: "test", place: "room", providerEventId: id, sender: "u", text })
const conv = ConversationId.make("test:room")

const filesUnder = (dir: string): Array<string> =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name)
    return e.isDirectory() ? filesUnder(p) : e.isFile() ? [p] : []
  })

describe.skipIf(skipWithout("bwrap", "apt-get install bubblewrap"))("turns through bwrap with the gateway", () => {
  it.scopedLive("the openai core calls an enabled host action and answers; the key never reaches the sandbox", () =>
    Effect.gen(function* () {
      process.env[KEY_ENV] = CANARY
      yield* Effect.addFinalizer(() => Effect.sync(() => delete process.env[KEY_ENV]))
      const upstream = yield* scriptedUpstream((hit, res, n) => {
        if (n === 1) {
          json(res, 200, JSON.stringify({
            id: "c1", object: "chat.completion", model: "tiny",
            choices: [{ index: 0, finish_reason: "tool_calls", message: { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "hello__greet", arguments: "{\"name\":\"Ada\"}" } }] } }],
            usage: { prompt_tokens: 5, completion_tokens: 5, total_tokens: 10 }
          }))
        } else {
          const last = hit.body.messages.at(-1)
          json(res, 200, chatAnswer("tiny").replace("\"hello\"", JSON.stringify(`done: ${last.content}`)))
        }
      })
      const dir = tempDir()
      const providers = [{ name: "up", kind: "openai-compatible", baseUrl: upstream.url, apiKeyEnv: KEY_ENV, models: ["tiny"] }]
      const cfg = config(dir, {
        providers,
        workspaces: [{ id: "main", instructions: "Be brief.", agentCore: "openai", actions: ["hello.greet"] }]
      })
      // Its own folder: the stack builds its gateway after the executor (see docs/sandbox.md).
      const gateway = Layer.provide(Gateway.layer, GatewaySettings.layerFrom({ dataDir: tempDir("pynchy-gw-"), providers: cfg.providers, gateway: GatewayConfig.make({}) }))
      const runnerPath = yield* Effect.promise(runnerBundle)
      const ctx = yield* Layer.build(makeTestHost(cfg, { plugins: [actionsPlugin], executor: sandboxExecutor(cfg, { runnerPath }, { plugins: [actionsPlugin], gateway }) }))
      const { ingest } = yield* Effect.provide(Ingest, ctx)
      yield* ingest(msg("e1", "greet Ada please"))
      const turn = yield* awaitTurnEnd(conv).pipe(Effect.provide(ctx))
      assert.strictEqual(turn.status, "completed", turn.error ?? "")
      yield* awaitSettled(conv, 1).pipe(Effect.provide(ctx))
      assert.deepStrictEqual(sentLines(dir).map((l) => l.text), ["done: {\"text\":\"Hello, Ada!\"}"])
      // The upstream saw the key (added by the gateway), the tools, and the tool result.
      assert.strictEqual(upstream.hits[0]!.headers.authorization, `Bearer ${CANARY}`)
      assert.deepStrictEqual(upstream.hits[0]!.body.tools.map((t: any) => t.function.name), [...SANDBOX_TOOLS, "hello__greet", "tasks__schedule", "tasks__list", "tasks__cancel"])
      assert.strictEqual(upstream.hits[1]!.body.messages.at(-1).role, "tool")
      // Nothing the sandbox could see or wrote holds the key.
      const sid = turn.owner!.executor.slice("sandbox:".length)
      const files = [...filesUnder(path.join(dir, "sessions", sid)), ...filesUnder(path.join(dir, "sandboxes", sid))]
      assert.includeMembers(files.map((f) => path.basename(f)), ["turn.json", "transcript.jsonl", "outcome.json", "runner.log"])
      for (const f of files) assert.notInclude(fs.readFileSync(f, "latin1"), CANARY, f)
      for (const f of filesUnder(path.join(dir, "workspaces"))) assert.notInclude(fs.readFileSync(f, "latin1"), CANARY, f)
    }))

  it.scopedLive("the anthropic core speaks /v1/messages with tool use through the gateway", () =>
    Effect.gen(function* () {
      process.env[KEY_ENV] = CANARY
      yield* Effect.addFinalizer(() => Effect.sync(() => delete process.env[KEY_ENV]))
      const upstream = yield* scriptedUpstream((hit, res, n) => {
        const usage = { input_tokens: 5, output_tokens: 5 }
        const content = n === 1
          ? [{ type: "tool_use", id: "tu_1", name: "hello__greet", input: { name: "Cy" } }]
          : [{ type: "text", text: `done: ${hit.body.messages.at(-1).content[0].content}` }]
        json(res, 200, JSON.stringify({ id: `m${n}`, type: "message", role: "assistant", model: "tiny", content, stop_reason: n === 1 ? "tool_use" : "end_turn", usage }))
      })
      const dir = tempDir()
      const providers = [{ name: "up", kind: "openai-compatible", baseUrl: upstream.url, apiKeyEnv: KEY_ENV, models: ["tiny"] }]
      const cfg = config(dir, { providers, workspaces: [{ id: "main", agentCore: "anthropic", actions: ["hello.greet"] }] })
      const gateway = Layer.provide(Gateway.layer, GatewaySettings.layerFrom({ dataDir: tempDir("pynchy-gw-"), providers: cfg.providers, gateway: GatewayConfig.make({}) }))
      const runnerPath = yield* Effect.promise(runnerBundle)
      const ctx = yield* Layer.build(makeTestHost(cfg, { plugins: [actionsPlugin], executor: sandboxExecutor(cfg, { runnerPath }, { plugins: [actionsPlugin], gateway }) }))
      const { ingest } = yield* Effect.provide(Ingest, ctx)
      yield* ingest(msg("e1", "greet Cy"))
      const turn = yield* awaitTurnEnd(conv).pipe(Effect.provide(ctx))
      assert.strictEqual(turn.status, "completed", turn.error ?? "")
      yield* awaitSettled(conv, 1).pipe(Effect.provide(ctx))
      assert.deepStrictEqual(sentLines(dir).map((l) => l.text), ["done: {\"text\":\"Hello, Cy!\"}"])
      assert.strictEqual(upstream.hits[0]!.path, "/v1/messages")
      assert.deepStrictEqual(upstream.hits[0]!.body.tools.map((t: any) => t.name), [...SANDBOX_TOOLS, "hello__greet", "tasks__schedule", "tasks__list", "tasks__cancel"])
    }))

  it.scopedLive("an action that is not enabled for the workspace is refused inside the turn", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const cfg = config(dir, { workspaces: [{ id: "main", agentCore: "scripted", actions: ["hello.greet"] }] })
      const runnerPath = yield* Effect.promise(runnerBundle)
      const ctx = yield* Layer.build(makeTestHost(cfg, { plugins: [actionsPlugin], executor: sandboxExecutor(cfg, { runnerPath }, { plugins: [actionsPlugin] }) }))
      const { ingest } = yield* Effect.provide(Ingest, ctx)
      yield* ingest(msg("e1", "!tool db.drop {}"))
      yield* ingest(msg("e2", "!tool hello.greet {\"name\":\"Bo\"}"))
      yield* awaitSettled(conv, 2).pipe(Effect.provide(ctx))
      const texts = sentLines(dir).map((l) => l.text)
      assert.include(texts[0], "tool refused")
      assert.include(texts[0], "not_enabled")
      assert.strictEqual(texts[1], "tool ok: {\"text\":\"Hello, Bo!\"}")
    }))

  it.scopedLive("with no provider configured, the agent answers with a notice saying how to configure one", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const cfg = config(dir, { workspaces: [{ id: "main" }] })
      const runnerPath = yield* Effect.promise(runnerBundle)
      const ctx = yield* Layer.build(makeTestHost(cfg, { executor: sandboxExecutor(cfg, { runnerPath }) }))
      const { ingest } = yield* Effect.provide(Ingest, ctx)
      yield* ingest(msg("e1", "hi"))
      yield* awaitSettled(conv, 1).pipe(Effect.provide(ctx))
      assert.deepStrictEqual(sentLines(dir).map((l) => l.text), [NO_PROVIDER_NOTICE])
      const turn = yield* awaitTurnEnd(conv).pipe(Effect.provide(ctx))
      assert.strictEqual(turn.status, "completed")
    }))
})
