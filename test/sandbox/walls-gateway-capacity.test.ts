/**
 * Issue 34, finding 2, by the attack that broke it, in real bwrap sandboxes through the whole host:
 * a `bash` tool in one workspace opens as many gateway connections as it can and holds them idle
 * (reopening any that close) while another workspace's turn has to reach the gateway; and the
 * connections such a hog holds idle, or half-sent, are closed by the gateway's own timeouts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Layer, Schema } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { makeTestHost } from "../../layers/test.js"
import { GatewayConfig } from "../../src/config/gateway.js"
import { decodeConfig } from "../../src/config/HostConfig.js"
import { ConversationId } from "../../src/domain/ids.js"
import { Gateway, GatewaySettings } from "../../src/gateway/Gateway.js"
import { Ingest } from "../../src/pipeline/Ingest.js"
import { openaiStream } from "../agent/sse.js"
import { tempDir } from "../support/db.js"
import { eventually } from "../support/eventually.js"
import { awaitSettled, sentLines } from "../support/host.js"
import { skipWithout } from "../support/system.js"
import { type Hit, scriptedUpstream } from "../gateway/support.js"
import { awaitTurnEnd, runnerBundle, sandboxExecutor } from "./support.js"

const KEY_ENV = "PYNCHY_GWCAP_TEST_KEY"

/**
 * The hog: opens up to 400 connections to the gateway socket and never sends a byte on them;
 * every half second it reopens whatever was closed. Its status (open now, the most it held at
 * once, how many the other side closed) goes to /workspace/hog.json; it stops when
 * /workspace/stop appears.
 */
const HOG = `
import * as fs from "node:fs"
import * as net from "node:net"
const sock = process.env.PYNCHY_GATEWAY_SOCKET
const open = new Set()
let peak = 0, closed = 0, attempts = 0, rounds = 0
const connect = () => new Promise((resolve) => {
  attempts++
  const s = net.connect(sock)
  s.once("connect", () => { open.add(s); s.once("close", () => { open.delete(s); closed++ }); resolve(true) })
  s.once("error", () => resolve(false))
})
const pause = (ms) => new Promise((r) => setTimeout(r, ms))
const status = () => {
  fs.writeFileSync("/workspace/.hog.partial", JSON.stringify({ open: open.size, peak, closed, attempts, rounds }))
  fs.renameSync("/workspace/.hog.partial", "/workspace/hog.json")
}
while (!fs.existsSync("/workspace/stop")) {
  while (open.size < 400) if (!(await connect())) break
  await pause(500)
  peak = Math.max(peak, open.size)
  rounds++
  status()
}
for (const s of open) s.destroy()
`

/**
 * Idle and half-sent connections, never reopened: five silent ones, one with a request's headers
 * cut short, one left idle after a complete request. Prints how each ended once all have (or
 * after 40 s), as JSON.
 */
const IDLER = `
import * as net from "node:net"
const sock = process.env.PYNCHY_GATEWAY_SOCKET
const kinds = ["silent", "silent", "silent", "silent", "silent", "partial", "idle"]
const ends = await Promise.race([
  Promise.all(kinds.map((kind) => new Promise((resolve) => {
    let got = ""
    const s = net.connect(sock, () => {
      if (kind === "partial") s.write("POST /v1/chat/completions HTTP/1.1\\r\\nhost: x\\r\\n")
      if (kind === "idle") s.write("GET /health HTTP/1.1\\r\\nhost: x\\r\\n\\r\\n")
    })
    s.on("data", (d) => { got += d.toString("latin1") })
    s.on("error", () => undefined)
    s.once("close", () => resolve({ kind, closed: true, answer: got.slice(0, got.indexOf("\\r\\n")) }))
  }))),
  new Promise((resolve) => setTimeout(() => resolve("still open after 40 s"), 40_000))
])
console.log("IDLER " + JSON.stringify(ends))
process.exit(0)
`

const bash = (script: string, name: string, timeoutSeconds: number) =>
  ({ command: `cat > /tmp/${name}.mjs <<'EOF'\n${script}\nEOF\nnode /tmp/${name}.mjs`, timeoutSeconds })

const said = (hit: Hit): string => JSON.stringify(hit.body.messages)

const hostWith = (gateway: unknown, answer: (hit: Hit) => (res: Parameters<typeof openaiStream>[0]) => void) =>
  Effect.gen(function* () {
    process.env[KEY_ENV] = "sk-gwcap"
    yield* Effect.addFinalizer(() => Effect.sync(() => delete process.env[KEY_ENV]))
    const upstream = yield* scriptedUpstream((hit, res) => answer(hit)(res))
    const dir = tempDir()
    const cfg = Either.getOrThrow(decodeConfig({
      dataDir: dir,
      routes: [
        { connection: "test", place: "hog", workspace: "hog" },
        { connection: "test", place: "*", workspace: "main" }
      ],
      connections: { test: { kind: "recording", file: "sent.jsonl", idempotent: true } },
      providers: [{ name: "up", kind: "openai-compatible", baseUrl: upstream.url, apiKeyEnv: KEY_ENV, models: ["tiny"] }],
      workspaces: [{ id: "main", agentCore: "openai" }, { id: "hog", agentCore: "openai", sandbox: { timeoutSeconds: 300 } }]
    }, "test config"))
    const settings = { dataDir: tempDir("pynchy-gw-"), providers: cfg.providers, gateway: Schema.decodeUnknownSync(GatewayConfig)(gateway) }
    const runnerPath = yield* Effect.promise(runnerBundle)
    const ctx = yield* Layer.build(makeTestHost(cfg, { executor: sandboxExecutor(cfg, { runnerPath }, { gateway: Layer.provide(Gateway.layer, GatewaySettings.layerFrom(settings)) }) }))
    const { ingest } = yield* Effect.provide(Ingest, ctx)
    const say = (place: string, id: string, text: string) => ingest({ connection: "test", place, providerEventId: id, sender: "u", text })
    return { dir, ctx, say, upstream }
  })

describe.skipIf(skipWithout("bwrap", "apt-get install bubblewrap"))("walls: one sandbox cannot starve the gateway (issue 34, finding 2)", () => {
  it.scopedLive("a bash tool holding every gateway connection it can get idle; another workspace's turn still completes", () =>
    Effect.gen(function* () {
      const { dir, ctx, say } = yield* hostWith({}, (hit) => {
        const text = said(hit)
        if (text.includes("hog please")) {
          return text.includes("\"role\":\"tool\"")
            ? (res) => openaiStream(res, ["hog done"])
            : (res) => openaiStream(res, ["Holding."], [{ id: "call_1", name: "bash", input: bash(HOG, "hog", 240) }])
        }
        return (res) => openaiStream(res, ["victim answered"])
      })
      yield* say("hog", "h1", "hog please")
      const hogFile = path.join(dir, "workspaces", "hog", "hog.json")
      const hog = () => JSON.parse(fs.readFileSync(hogFile, "utf8")) as { open: number; peak: number; closed: number; attempts: number; rounds: number }
      // The hog has filled what it could and tried again at least once.
      yield* eventually(() => (hog().rounds >= 2 ? true : undefined), { label: "the hog holding its connections" })
      const held = hog()
      assert.isAbove(held.open, 0, "the hog reached the gateway at all")

      yield* say("room", "v1", "hello from another workspace")
      const victim = yield* awaitTurnEnd(ConversationId.make("test:room")).pipe(Effect.provide(ctx))
      assert.strictEqual(victim.status, "completed", `the other workspace's turn: ${victim.error ?? ""}`)
      yield* awaitSettled(ConversationId.make("test:room"), 1).pipe(Effect.provide(ctx))
      assert.include(sentLines(dir).map((l) => l.text), "victim answered")
      // The hog holds no more than its sandbox's share. Read once the gateway has caught up with a
      // round: a unix connect completes in the listen backlog, before the gateway accepts (and
      // closes) it, so on a loaded machine a round can count connections about to be closed.
      const limits = Schema.decodeUnknownSync(GatewayConfig)({}).limits
      yield* eventually(() => (hog().open <= limits.connectionsPerSandbox ? true : undefined), { label: "the hog holding at most its sandbox's share" })
      assert.isAbove(hog().attempts, limits.connectionsPerSandbox, "the hog tried for more than its share")

      fs.writeFileSync(path.join(dir, "workspaces", "hog", "stop"), "")
      const hogTurn = yield* awaitTurnEnd(ConversationId.make("test:hog")).pipe(Effect.provide(ctx))
      assert.strictEqual(hogTurn.status, "completed", hogTurn.error ?? "")
    }), { timeout: 120_000 })

  it.scopedLive("idle, silent and half-sent connections from a sandbox are closed by the gateway's timeouts", () =>
    Effect.gen(function* () {
      let result: string | undefined
      const { say } = yield* hostWith({ limits: { headersTimeoutMs: 1_000, idleTimeoutMs: 1_000 } }, (hit) => {
        const tool = (hit.body.messages as Array<{ role: string; content: string }>).find((m) => m.role === "tool")
        if (tool !== undefined) {
          result = tool.content
          return (res) => openaiStream(res, ["seen"])
        }
        return (res) => openaiStream(res, ["Idling."], [{ id: "call_1", name: "bash", input: bash(IDLER, "idler", 120) }])
      })
      yield* say("hog", "h1", "idle please")
      const out = yield* eventually(() => result, { label: "the idler's report", timeout: "90 seconds" })
      const line = out.split("\n").find((l) => l.includes("IDLER "))
      assert.isDefined(line, out)
      type End = { readonly kind: string; readonly closed: boolean; readonly answer: string }
      const ends = JSON.parse(line!.slice(line!.indexOf("IDLER ") + 6)) as ReadonlyArray<End> | string
      if (typeof ends === "string") return assert.fail(`the connections: ${ends}`)
      for (const e of ends) assert.isTrue(e.closed, e.kind)
      // Silent and half-sent ones get 408 (or nothing, if closed before a byte was parsed); the
      // kept-alive one had its answer and was then closed for idling.
      for (const e of ends.filter((e) => e.kind !== "idle")) assert.include(["", "HTTP/1.1 408 Request Timeout"], e.answer, e.kind)
      assert.strictEqual(ends.find((e) => e.kind === "idle")?.answer, "HTTP/1.1 200 OK")
    }), { timeout: 120_000 })
})
