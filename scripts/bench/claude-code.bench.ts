/**
 * Cold turn time of the claude-code core against the built-in openai core, in the same run: from
 * the message committed (Ingest returned) to the first upstream request of its turn. Everything in
 * between is real: the host pipeline, a new bwrap sandbox, the runner bundle, the core, the gateway.
 * For claude-code that includes importing the Claude Agent SDK and starting the native Claude Code
 * binary (a fresh HOME each time: every message opens a new conversation, so nothing is resumed).
 * The upstream answers at once (a one-word text), so each turn ends quickly after its request.
 * 1 warm-up message per core, then 6 timed, alternating; p50 and the worst.
 * Needs bwrap and the plugin (`npm ci --prefix plugins/claude-code`).
 */
import { Effect, Either, Layer, Logger, LogLevel } from "effect"
import type * as http from "node:http"
import * as path from "node:path"
import { makeTestHost } from "../../layers/test.js"
import { decodeConfig } from "../../src/config/HostConfig.js"
import { Gateway, GatewaySettings } from "../../src/gateway/Gateway.js"
import { ConversationId } from "../../src/domain/ids.js"
import { Ingest } from "../../src/pipeline/Ingest.js"
import { installCommand, isInstalled, OPTIONAL_PLUGINS } from "../../src/plugins/first-party.js"
import { hostPackageRoot } from "../../src/plugins/paths.js"
import { tempDir } from "../../test/support/db.js"
import { awaitSettled } from "../../test/support/host.js"
import { scriptedUpstream } from "../../test/gateway/support.js"
import { runnerBundle, sandboxExecutor } from "../../test/sandbox/support.js"
import { median } from "./stats.js"
import type { Row } from "./types.js"

const WARMUP = 1
const TURNS = 6
const KEY_ENV = "PYNCHY_BENCH_CLAUDE_CODE_KEY"
const PLUGIN = OPTIONAL_PLUGINS.find((p) => p.name === "claude-code")!

const answerMessages = (res: http.ServerResponse) => {
  res.writeHead(200, { "content-type": "text/event-stream" })
  const ev = (event: string, data: unknown) => res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`)
  ev("message_start", { type: "message_start", message: { id: "msg_b", type: "message", role: "assistant", model: "tiny", content: [], stop_reason: null, usage: { input_tokens: 5, output_tokens: 1 } } })
  ev("content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } })
  ev("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "ok" } })
  ev("content_block_stop", { type: "content_block_stop", index: 0 })
  ev("message_delta", { type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: 1 } })
  ev("message_stop", { type: "message_stop" })
  res.end()
}

const answerChat = (res: http.ServerResponse, stream: boolean) => {
  if (!stream) {
    const body = JSON.stringify({ id: "c", object: "chat.completion", model: "tiny", choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content: "ok" } }], usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 } })
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
    return res.end(body)
  }
  res.writeHead(200, { "content-type": "text/event-stream" })
  res.write(`data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", model: "tiny", choices: [{ index: 0, delta: { role: "assistant", content: "ok" }, finish_reason: "stop" }] })}\n\n`)
  res.write(`data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", model: "tiny", choices: [], usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 } })}\n\n`)
  res.end("data: [DONE]\n\n")
}

export default async (): Promise<Array<Row>> => {
  if (!isInstalled(hostPackageRoot(), PLUGIN)) throw new Error(`the claude-code plugin is not installed: ${installCommand(PLUGIN)}`)
  const samples: Record<"claude-code" | "openai", Array<number>> = { "claude-code": [], openai: [] }
  const program = Effect.gen(function* () {
    process.env[KEY_ENV] = "sk-bench-claude-code"
    yield* Effect.addFinalizer(() => Effect.sync(() => delete process.env[KEY_ENV]))
    // When each conversation's first request arrived (the conversation is in the user message's text).
    const arrived = new Map<string, number>()
    const upstream = yield* scriptedUpstream((hit, res) => {
      const at = performance.now()
      const tag = /bench-[a-z-]+-\d+/.exec(JSON.stringify(hit.body?.messages ?? []))?.[0]
      if (tag !== undefined && !arrived.has(tag)) arrived.set(tag, at)
      if (hit.path.startsWith("/v1/messages")) return answerMessages(res)
      answerChat(res, hit.body?.stream === true)
    })
    const dir = tempDir()
    const cfg = Either.getOrThrow(decodeConfig({
      dataDir: dir,
      containerRuntime: "bwrap",
      routes: [{ connection: "cc", place: "*", workspace: "code" }, { connection: "oa", place: "*", workspace: "plain" }],
      connections: { cc: { kind: "recording", file: "cc.jsonl", idempotent: true }, oa: { kind: "recording", file: "oa.jsonl", idempotent: true } },
      plugins: { modules: [path.join(hostPackageRoot(), PLUGIN.folder)] },
      providers: [{ name: "up", kind: "openai-compatible", baseUrl: upstream.url, apiKeyEnv: KEY_ENV, models: ["tiny"] }],
      workspaces: [{ id: "code", agentCore: "claude-code", model: "tiny" }, { id: "plain", agentCore: "openai", model: "tiny" }]
    }, "bench config"))
    const gateway = Layer.provide(Gateway.layer, GatewaySettings.layerFrom({ dataDir: tempDir("pynchy-gw-"), providers: cfg.providers, gateway: cfg.gateway }))
    const runnerPath = yield* Effect.promise(runnerBundle)
    const ctx = yield* Layer.build(makeTestHost(cfg, { executor: sandboxExecutor(cfg, { runnerPath }, { gateway }) }))
    const { ingest } = yield* Effect.provide(Ingest, ctx)

    const turn = (core: "claude-code" | "openai", i: number) =>
      Effect.gen(function* () {
        const connection = core === "claude-code" ? "cc" : "oa"
        const tag = `bench-${core}-${i}`
        yield* ingest({ connection, place: tag, providerEventId: tag, sender: "u", text: `say ok (${tag})` })
        const committed = performance.now()
        yield* awaitSettled(ConversationId.make(`${connection}:${tag}`), 1).pipe(Effect.provide(ctx))
        const at = arrived.get(tag)
        if (at === undefined) return yield* Effect.die(new Error(`${tag}: its turn made no upstream request`))
        return at - committed
      })

    for (let i = 0; i < WARMUP + TURNS; i++) {
      for (const core of ["openai", "claude-code"] as const) {
        const ms = yield* turn(core, i)
        if (i >= WARMUP) samples[core].push(ms)
      }
    }
  })
  await Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(Logger.minimumLogLevel(LogLevel.Error))))
  const openai = samples.openai
  const cc = samples["claude-code"]
  return [
    { name: "cold turn: message committed → first upstream request, claude-code core, p50", value: median(cc), unit: "ms", baseline: { name: "built-in openai core, p50", value: median(openai) } },
    { name: "cold turn: message committed → first upstream request, claude-code core, max", value: Math.max(...cc), unit: "ms", baseline: { name: "built-in openai core, max", value: Math.max(...openai) } }
  ]
}
