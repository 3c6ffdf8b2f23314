/**
 * The turn token against a hostile `bash` tool (issue 34, item 1), through the whole host on a real
 * bwrap: during a turn of each built-in LLM core, a tool call scans the memory, environment and
 * descriptors of every process it can see for token-shaped strings and tries them on the gateway
 * socket. A decoy process of the tool's own proves the scan works; nothing else is found, the
 * runner's memory, environment and descriptors are closed to it, and the gateway accepts nothing.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Layer } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { makeTestHost } from "../../layers/test.js"
import { decodeConfig } from "../../src/config/HostConfig.js"
import { GatewayConfig } from "../../src/config/gateway.js"
import { ConversationId } from "../../src/domain/ids.js"
import { Gateway, GatewaySettings } from "../../src/gateway/Gateway.js"
import { Ingest } from "../../src/pipeline/Ingest.js"
import { anthropicStream, openaiStream } from "../agent/sse.js"
import { scriptedUpstream } from "../gateway/support.js"
import { tempDir } from "../support/db.js"
import { awaitSettled, sentLines } from "../support/host.js"
import { skipWithout } from "../support/system.js"
import { TOKEN_HUNT } from "./probes.js"
import { awaitTurnEnd, runnerBundle, sandboxExecutor } from "./support.js"

const KEY_ENV = "PYNCHY_TOKEN_WALL_TEST_KEY"
const conv = ConversationId.make("test:room")
const COMMAND = "node /workspace/hunt.mjs"

interface Hunt {
  readonly decoyPid: number
  readonly runnerPid: number
  readonly access: Record<string, { readonly comm: string; readonly environ: string; readonly mem: string; readonly fd: string }>
  readonly candidates: ReadonlyArray<{ readonly decoy: boolean; readonly where: ReadonlyArray<string>; readonly status: number | string }>
}

/** The hunt's JSON line out of the bash tool's answer as the model saw it. */
const huntOf = (toolResult: string): Hunt => {
  const line = toolResult.split("\n").find((l) => l.startsWith("{\"decoyPid\""))
  assert.isDefined(line, `the hunt printed nothing usable: ${toolResult.slice(0, 2_000)}`)
  return JSON.parse(line!)
}

const runHunt = (core: "openai" | "anthropic") =>
  Effect.gen(function* () {
    process.env[KEY_ENV] = "sk-token-wall-upstream-key"
    yield* Effect.addFinalizer(() => Effect.sync(() => delete process.env[KEY_ENV]))
    const call = { id: "call_1", name: "bash", input: { command: COMMAND, timeoutSeconds: 120 } }
    const upstream = yield* scriptedUpstream((_hit, res, n) =>
      core === "openai"
        ? (n === 1 ? openaiStream(res, [], [call]) : openaiStream(res, ["done"]))
        : (n === 1 ? anthropicStream(res, [], [call]) : anthropicStream(res, ["done"]))
    )
    const dir = tempDir("pynchy-token-wall-")
    const cfg = Either.getOrThrow(decodeConfig({
      dataDir: dir,
      routes: [{ connection: "test", place: "*", workspace: "main" }],
      connections: { test: { kind: "recording", file: "sent.jsonl", idempotent: true } },
      providers: [{ name: "up", kind: core === "openai" ? "openai-compatible" : "anthropic", baseUrl: upstream.url, apiKeyEnv: KEY_ENV, models: ["tiny"] }],
      workspaces: [{ id: "main", agentCore: core, sandbox: { timeoutSeconds: 300 } }]
    }, "test config"))
    const workspace = path.join(dir, "workspaces", "main")
    fs.mkdirSync(workspace, { recursive: true })
    fs.writeFileSync(path.join(workspace, "hunt.mjs"), TOKEN_HUNT)
    const gateway = Layer.provide(Gateway.layer, GatewaySettings.layerFrom({ dataDir: tempDir("pynchy-gw-"), providers: cfg.providers, gateway: GatewayConfig.make({}) }))
    const runnerPath = yield* Effect.promise(runnerBundle)
    const ctx = yield* Layer.build(makeTestHost(cfg, { executor: sandboxExecutor(cfg, { runnerPath }, { gateway }) }))
    const { ingest } = yield* Effect.provide(Ingest, ctx)
    yield* ingest({ connection: "test", place: "room", providerEventId: "e1", sender: "u", text: "look around" })
    const turn = yield* awaitTurnEnd(conv).pipe(Effect.provide(ctx))
    assert.strictEqual(turn.status, "completed", turn.error ?? "")
    yield* awaitSettled(conv, 1).pipe(Effect.provide(ctx))
    assert.deepStrictEqual(sentLines(dir).map((l) => l.text), ["done"])
    const second = upstream.hits[1]!.body
    const result: string = core === "openai"
      ? second.messages.find((m: any) => m.role === "tool").content
      : second.messages.at(-1).content.find((b: any) => b.type === "tool_result").content
    return huntOf(result)
  })

const assertWallHolds = (hunt: Hunt) => {
  // The scan works: the decoy's token-shaped string was read out of its memory, and refused.
  const decoy = hunt.candidates.filter((c) => c.decoy)
  assert.strictEqual(decoy.length, 1, `the scan did not find its own decoy: ${JSON.stringify(hunt)}`)
  assert.include(decoy[0]!.where, `mem:${hunt.decoyPid}`)
  assert.strictEqual(decoy[0]!.status, 401)
  // Nothing else token-shaped anywhere it could read, and the gateway accepted nothing.
  assert.deepStrictEqual(hunt.candidates.filter((c) => !c.decoy), [], "a token-shaped string was found outside the decoy")
  assert.isTrue(hunt.candidates.every((c) => c.status !== 200))
  // The runner's memory, environment and descriptors are closed to the tool.
  const runner = hunt.access[String(hunt.runnerPid)]
  assert.isDefined(runner, `the runner (pid ${hunt.runnerPid}) was not seen`)
  assert.strictEqual(runner!.mem, "EACCES", "the runner's memory is readable")
  assert.strictEqual(runner!.environ, "EACCES", "the runner's environment is readable")
  assert.strictEqual(runner!.fd, "EACCES", "the runner's descriptors are listable")
}

describe.skipIf(skipWithout("bwrap", "apt-get install bubblewrap"))("the turn token against a hostile bash tool", () => {
  it.scopedLive("openai core: a memory, environment and descriptor scan of every visible process finds nothing the gateway accepts", () =>
    Effect.map(runHunt("openai"), assertWallHolds), { timeout: 180_000 })

  it.scopedLive("anthropic core: the same scan finds nothing the gateway accepts", () =>
    Effect.map(runHunt("anthropic"), assertWallHolds), { timeout: 180_000 })
})
