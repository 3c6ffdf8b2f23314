/**
 * One turn of the real runner in a real bwrap sandbox, through the real gateway to a scripted
 * upstream, with the turn spec written by the test (history, summary and sandbox tools set
 * directly) and the host's end of the IPC socket in the test's hands: every runner message is
 * recorded in order, and host tool calls are answered by `hostTool`.
 */
import { Clock, Effect, Redacted } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import type { Scope } from "effect"
import type { TurnSpec } from "../../src/protocol/ipc.js"
import { type IpcEvent, listenIpc } from "../../src/sandbox/IpcServer.js"
import * as Bwrap from "../../src/sandbox/runtimes/bwrap.js"
import { SANDBOX_TOOLS } from "../../src/protocol/sandbox-tools.js"
import { tempDir } from "../support/db.js"
import { provider, type Script, scriptedUpstream, startGateway, type Upstream } from "../gateway/support.js"
import { runnerBundle } from "../sandbox/support.js"

export const CANARY = `sk-agent-canary-${Date.now().toString(36)}`
const KEY_ENV = "PYNCHY_AGENT_TEST_KEY"

export interface TurnRun {
  readonly events: ReadonlyArray<IpcEvent>
  readonly upstream: Upstream
  readonly workspaceDir: string
  readonly sessionDir: string
  /** The host-only folder (its `runner.log` holds the runner's stderr). */
  readonly hostDir: string
  /** The turn token the runner got (to prove no tool result holds it). */
  readonly token: string
  readonly ms: number
}

export interface TurnOptions {
  readonly script: Script
  readonly core?: "openai" | "anthropic"
  readonly spec?: Partial<TurnSpec>
  /** Fills the workspace folder before the sandbox starts. */
  readonly workspace?: (dir: string) => void
  readonly hostTool?: (tool: string, input: unknown) => { ok: boolean; output: unknown }
  /** An upstream already running (llama-server); `script` is then unused. */
  readonly baseUrl?: string
}

export const baseSpec = (core: "openai" | "anthropic"): TurnSpec => ({
  version: 2,
  turnId: 1,
  conversationId: "test:room",
  workspace: { id: "main", instructions: "Be brief." },
  summary: null,
  history: [],
  messages: [{ id: 1, sender: "u", text: "hello", createdAt: 0 }],
  skills: [],
  tools: [],
  sandboxTools: [...SANDBOX_TOOLS],
  core,
  model: "tiny",
  api: core === "anthropic" ? "messages" : "chat",
  maxToolRounds: 8
})

export interface RunnerStart {
  readonly spec: TurnSpec
  readonly gatewaySocket: string
  readonly token: string
  /** Fills the workspace folder before the sandbox starts. */
  readonly workspace?: (dir: string) => void
  readonly runtime?: ReturnType<typeof Bwrap.make>
}

/**
 * The runner bundle in a real bwrap sandbox with the spec written as the executor writes it (a
 * host-only folder, the workspace's read-only skills folder), and the host's end of its IPC socket.
 */
export const startRunner = (o: RunnerStart) =>
  Effect.gen(function* () {
    const root = tempDir("pynchy-agent-")
    const dirs = { workspaceDir: path.join(root, "w"), sessionDir: path.join(root, "s"), hostDir: path.join(root, "h") }
    for (const d of Object.values(dirs)) fs.mkdirSync(d, { mode: 0o700 })
    fs.mkdirSync(path.join(dirs.workspaceDir, "skills"))
    o.workspace?.(dirs.workspaceDir)
    const turnFile = path.join(dirs.hostDir, "turn.json")
    fs.writeFileSync(turnFile, JSON.stringify(o.spec), { mode: 0o600 })
    const ipcSocket = path.join(dirs.hostDir, "ipc.sock")
    const ipc = yield* Effect.orDie(listenIpc(ipcSocket, { token: Redacted.make(o.token) }))
    const runtime = o.runtime ?? Bwrap.make()
    const entry = yield* Effect.promise(runnerBundle)
    const handle = yield* Effect.acquireRelease(
      Effect.promise(() => runtime.start({
        sandboxId: Math.random().toString(16).slice(2, 14).padEnd(12, "0"),
        ...dirs,
        workspaceReadOnly: ["skills"],
        turnFile,
        skills: [],
        ipcSocket,
        gatewaySocket: o.gatewaySocket,
        entry,
        env: {}
      })),
      (h) => Effect.promise(() => runtime.kill(h.id))
    )
    return { dirs, ipc, handle }
  })

export const runTurn = (options: TurnOptions): Effect.Effect<TurnRun, never, Scope.Scope> =>
  Effect.gen(function* () {
    process.env[KEY_ENV] = CANARY
    yield* Effect.addFinalizer(() => Effect.sync(() => delete process.env[KEY_ENV]))
    const upstream = yield* scriptedUpstream(options.script)
    const gw = yield* Effect.orDie(startGateway([provider({ name: "up", baseUrl: options.baseUrl ?? upstream.url, apiKeyEnv: KEY_ENV, models: ["tiny"] })]))
    const now = yield* Clock.currentTimeMillis
    const minted = yield* gw.mintToken({ workspace: "main", conversationId: "test:room", models: ["tiny"], expiresAt: now + 120_000 })
    const started = performance.now()
    const { dirs, ipc, handle } = yield* startRunner({
      spec: { ...baseSpec(options.core ?? "openai"), ...options.spec },
      gatewaySocket: gw.socketPath!,
      token: Redacted.value(minted.token),
      ...(options.workspace ? { workspace: options.workspace } : {})
    })
    const events: Array<IpcEvent> = []
    const exited = Effect.promise(() => handle.exited)
    const serve = Effect.gen(function* () {
      while (true) {
        const e = yield* ipc.events.take
        events.push(e)
        if (e._tag === "closed") return
        if (e._tag === "tool_call") {
          const answer = options.hostTool?.(e.tool, e.input) ?? { ok: false, output: { code: "unknown_tool", message: "no such host tool" } }
          yield* ipc.send({ _tag: "tool_result", callId: e.callId, ...answer })
        }
      }
    })
    // The runner's `closed` comes after all it wrote; a runner that never connects ends with its exit.
    yield* Effect.raceFirst(serve, Effect.zipRight(exited, Effect.sleep("200 millis"))).pipe(Effect.timeout("90 seconds"), Effect.orDie)
    return { events, upstream, ...dirs, token: Redacted.value(minted.token), ms: performance.now() - started }
  })

/** The runner's text deltas and replies, in the order they came. */
export const spoken = (run: TurnRun) =>
  run.events.flatMap((e) => (e._tag === "text_delta" ? [`delta:${e.text}`] : e._tag === "reply" ? [`reply:${e.text}`] : e._tag === "error" ? [`error:${e.code}`] : []))

/** The runner's transcript lines (for tool calls and results). */
export const transcript = (run: TurnRun): Array<Record<string, any>> => {
  try {
    return fs.readFileSync(path.join(run.sessionDir, "transcript.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l))
  } catch {
    return []
  }
}
