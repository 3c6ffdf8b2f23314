/**
 * The sandbox figures of issue 8:
 *   1. sandbox start overhead: a trivial script started and ended through the bwrap runtime
 *      against the same script as a bare node child (the process runtime: cleared env, no
 *      namespaces), alternated in one run; the goal is ≤ 10 ms added at p50. The bwrap figure
 *      includes every wall: the perl launcher, the seccomp program on fd 4, and when the bench runs
 *      as root the staging of the mounts and the drop to the sandbox user;
 *   2. a whole scripted turn through the sandbox executor (bwrap): ingest → reply delivery sent, p50.
 */
import { build } from "esbuild"
import { Effect, Either, Layer, Logger, LogLevel, type Scope } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { makeTestHost } from "../../layers/test.js"
import { decodeConfig, HostConfig } from "../../src/config/HostConfig.js"
import { DeliveryStore } from "../../src/db/DeliveryStore.js"
import { ConversationId } from "../../src/domain/ids.js"
import { Ingest } from "../../src/pipeline/Ingest.js"
import { BUILTINS } from "../../src/builtins/list.js"
import { PluginRegistry } from "../../src/plugins/PluginRegistry.js"
import type { SandboxRuntime, SandboxSpec } from "../../src/sandbox/runtime.js"
import * as Bwrap from "../../src/sandbox/runtimes/bwrap.js"
import * as Process from "../../src/sandbox/runtimes/process.js"
import * as SandboxExecutor from "../../src/sandbox/SandboxExecutor.js"
import type { Row } from "./types.js"
import { median } from "./stats.js"

const STARTS = 40
const STARTS_WARMUP = 5
const TURNS = 30
const TURNS_WARMUP = 3

const progress = (line: string) => process.stderr.write(`  sandbox: ${line}\n`)
const run = <A, E>(program: Effect.Effect<A, E, Scope.Scope>): Promise<A> =>
  Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(Logger.minimumLogLevel(LogLevel.Error))))

const tempDir = () => fs.mkdtempSync(path.join(os.tmpdir(), "pynchy-bench-sandbox-"))

/** ms from start() to the end of a script that does nothing. */
const startOnce = async (runtime: SandboxRuntime, spec: SandboxSpec) => {
  const t0 = performance.now()
  const handle = await runtime.start(spec)
  await handle.exited
  return performance.now() - t0
}

const startOverhead = async (): Promise<Array<Row>> => {
  const root = tempDir()
  const spec: SandboxSpec = {
    sandboxId: "be0000000001",
    workspaceDir: path.join(root, "w"),
    sessionDir: path.join(root, "s"),
    hostDir: path.join(root, "h"),
    turnFile: path.join(root, "h", "turn.json"),
    skills: [],
    ipcSocket: path.join(root, "ipc.sock"),
    gatewaySocket: null,
    entry: path.join(root, "noop.mjs"),
    env: {}
  }
  fs.mkdirSync(spec.workspaceDir)
  fs.mkdirSync(spec.sessionDir)
  fs.mkdirSync(spec.hostDir)
  fs.writeFileSync(spec.turnFile, "{}")
  fs.writeFileSync(spec.ipcSocket, "")
  fs.writeFileSync(spec.entry, "")
  const bwrap = Bwrap.make()
  const bare = Process.make()
  const times = { bwrap: [] as Array<number>, bare: [] as Array<number> }
  for (let i = 0; i < STARTS_WARMUP + STARTS; i++) {
    const b = await startOnce(bwrap, spec)
    const n = await startOnce(bare, spec)
    if (i >= STARTS_WARMUP) {
      times.bwrap.push(b)
      times.bare.push(n)
    }
  }
  fs.rmSync(root, { recursive: true, force: true })
  const p50 = { bwrap: median(times.bwrap), bare: median(times.bare) }
  progress(`start p50: bwrap ${p50.bwrap.toFixed(1)} ms, bare node ${p50.bare.toFixed(1)} ms`)
  return [
    { name: "sandbox start+exit, bwrap (p50)", value: p50.bwrap, unit: "ms", baseline: { name: "bare node child, cleared env", value: p50.bare } },
    { name: "bwrap start overhead over bare node (p50)", value: p50.bwrap - p50.bare, unit: "ms", goal: "≤ 10 ms" }
  ]
}

const wholeTurn = async (): Promise<Array<Row>> => {
  const dir = tempDir()
  const runnerPath = path.join(dir, "runner.mjs")
  await build({ entryPoints: ["src/agent/runner.ts"], outfile: runnerPath, bundle: true, minify: true, platform: "node", target: "node20", format: "esm", logLevel: "warning", banner: { js: "import { createRequire as __pynchyRequire } from 'node:module'; const require = __pynchyRequire(import.meta.url);" } })
  const config = Either.getOrThrow(decodeConfig({
    dataDir: dir,
    containerRuntime: "bwrap",
    workspaces: [{ id: "main", agentCore: "scripted" }],
    routes: [{ connection: "test", place: "*", workspace: "main" }],
    connections: { test: { kind: "recording", file: "sent.jsonl", idempotent: true } }
  }, "bench config"))
  const executor = Layer.provide(
    SandboxExecutor.layer({ runnerPath }),
    PluginRegistry.layerWith({ root: os.tmpdir(), builtins: BUILTINS })
  ).pipe(Layer.provide(HostConfig.layerFrom(config)), Layer.orDie)
  const conv = ConversationId.make("test:bench")
  const samples = await run(
    Effect.gen(function* () {
      const ctx = yield* Layer.build(makeTestHost(config, { executor }))
      const { ingest } = yield* Effect.provide(Ingest, ctx)
      const deliveries = yield* Effect.provide(DeliveryStore, ctx)
      const out: Array<number> = []
      for (let i = 0; i < TURNS_WARMUP + TURNS; i++) {
        const t0 = performance.now()
        yield* ingest({ connection: "test", place: "bench", providerEventId: `b${i}`, sender: "u", text: `m${i}` })
        while (true) {
          const all = yield* deliveries.byConversation(conv, 1_000)
          if (all.filter((d) => d.status === "sent").length > i) break
          yield* Effect.sleep("1 millis")
        }
        if (i >= TURNS_WARMUP) out.push(performance.now() - t0)
      }
      return out
    })
  )
  fs.rmSync(dir, { recursive: true, force: true })
  const p50 = median(samples)
  progress(`whole scripted turn p50 ${p50.toFixed(1)} ms over ${samples.length} turns`)
  return [{ name: "scripted turn through bwrap, ingest → sent (p50)", value: p50, unit: "ms" }]
}

export default async function (): Promise<Array<Row>> {
  if (!(await Bwrap.make().available!()).ok) throw new Error("bwrap is not usable here (apt-get install bubblewrap)")
  return [...(await startOverhead()), ...(await wholeTurn())]
}
