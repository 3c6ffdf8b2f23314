/**
 * Memory through a real sandbox: the turn spec the executor writes holds the earlier exchange,
 * and (once the runner maps history into its request) the LLM upstream behind the real gateway
 * receives it: "my name is Zed", then "what is my name?".
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Layer } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { makeTestHost } from "../../layers/test.js"
import { decodeConfig } from "../../src/config/HostConfig.js"
import type { PynchyConfig } from "../../src/config/schema.js"
import { TurnStore } from "../../src/db/TurnStore.js"
import { GatewayConfig } from "../../src/config/gateway.js"
import { Gateway, GatewaySettings } from "../../src/gateway/Gateway.js"
import { Ingest } from "../../src/pipeline/Ingest.js"
import { tempDir } from "../support/db.js"
import { awaitSettled, sentLines } from "../support/host.js"
import { skipWithout } from "../support/system.js"
import { json, scriptedUpstream } from "../gateway/support.js"
import { awaitTurnEnd, runnerBundle, sandboxExecutor } from "../sandbox/support.js"
import { conv } from "./support.js"

const config = (dir: string, extra: Record<string, unknown>): PynchyConfig =>
  Either.getOrThrow(decodeConfig({
    dataDir: dir,
    routes: [{ connection: "test", place: "*", workspace: "main" }],
    connections: { test: { kind: "recording", file: "sent.jsonl", idempotent: true } },
    ...extra
  }, "test config"))

const msg = (id: string, text: string) => ({ connection: "test", place: "room", providerEventId: id, sender: "u", text })

const specOf = (dir: string, executor: string) => JSON.parse(fs.readFileSync(path.join(dir, "sandboxes", executor.slice("sandbox:".length), "turn.json"), "utf8"))

describe.skipIf(skipWithout("bwrap", "apt-get install bubblewrap"))("memory through a sandbox", () => {
  it.scopedLive("the second turn's spec holds the first exchange: the user's text and the delivered reply", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const cfg = config(dir, { workspaces: [{ id: "main", agentCore: "scripted" }] })
      const runnerPath = yield* Effect.promise(runnerBundle)
      const ctx = yield* Layer.build(makeTestHost(cfg, { executor: sandboxExecutor(cfg, { runnerPath }) }))
      const { ingest } = yield* Effect.provide(Ingest, ctx)
      yield* ingest(msg("e1", "my name is Zed"))
      yield* awaitSettled(conv, 1).pipe(Effect.provide(ctx))
      yield* ingest(msg("e2", "what is my name?"))
      yield* awaitSettled(conv, 2).pipe(Effect.provide(ctx))
      const [second, first] = yield* Effect.flatMap(TurnStore, (t) => t.recent(conv, 2)).pipe(Effect.provide(ctx))
      const firstSpec = specOf(dir, first!.owner!.executor)
      assert.deepStrictEqual([firstSpec.summary, firstSpec.history], [null, []])
      const spec = specOf(dir, second!.owner!.executor)
      assert.isNull(spec.summary)
      assert.deepStrictEqual(spec.history, [{ role: "user", text: "my name is Zed" }, { role: "assistant", text: sentLines(dir)[0]!.text }])
      assert.deepStrictEqual(spec.messages.map((m: { text: string }) => m.text), ["what is my name?"])
    }))

  it.scopedLive("through the gateway: the second request to the upstream holds the earlier exchange", () =>
    Effect.gen(function* () {
      const upstream = yield* scriptedUpstream((hit, res, n) => {
        const answer = n === 1 ? "Nice to meet you, Zed." : `You said: ${JSON.stringify(hit.body.messages)}`
        json(res, 200, JSON.stringify({
          id: `c${n}`, object: "chat.completion", model: "tiny",
          choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content: answer } }],
          usage: { prompt_tokens: 5, completion_tokens: 5, total_tokens: 10 }
        }))
      })
      const dir = tempDir()
      const providers = [{ name: "up", kind: "openai-compatible", baseUrl: upstream.url, models: ["tiny"] }]
      const cfg = config(dir, { providers, workspaces: [{ id: "main", agentCore: "openai" }] })
      const gateway = Layer.provide(Gateway.layer, GatewaySettings.layerFrom({ dataDir: tempDir("pynchy-gw-"), providers: cfg.providers, gateway: GatewayConfig.make({}) }))
      const runnerPath = yield* Effect.promise(runnerBundle)
      const ctx = yield* Layer.build(makeTestHost(cfg, { executor: sandboxExecutor(cfg, { runnerPath }, { gateway }) }))
      const { ingest } = yield* Effect.provide(Ingest, ctx)
      yield* ingest(msg("e1", "my name is Zed"))
      yield* awaitSettled(conv, 1).pipe(Effect.provide(ctx))
      yield* ingest(msg("e2", "what is my name?"))
      const turn = yield* awaitTurnEnd(conv).pipe(Effect.provide(ctx))
      assert.strictEqual(turn.status, "completed", turn.error ?? "")
      yield* awaitSettled(conv, 2).pipe(Effect.provide(ctx))
      const texts = upstream.hits[1]!.body.messages.map((m: { role: string; content: unknown }) => [m.role, JSON.stringify(m.content)])
      const user = texts.findIndex(([role, c]: [string, string]) => role === "user" && c.includes("my name is Zed"))
      const reply = texts.findIndex(([role, c]: [string, string]) => role === "assistant" && c.includes("Nice to meet you, Zed."))
      const question = texts.findIndex(([role, c]: [string, string]) => role === "user" && c.includes("what is my name?"))
      assert.isTrue(user >= 0 && user < reply && reply < question, JSON.stringify(texts))
    }))
})
