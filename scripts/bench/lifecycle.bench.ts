/**
 * Connection runtime lifecycle cost on the real CLI host: `pynchy start` spawn-to-ready and
 * SIGINT-to-exit with 20 connection runtimes (a generated plugin module, each runtime trivial and
 * ready at once) against the same host without them, interleaved in one run; median of RUNS.
 */
import { spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { setTimeout as sleep } from "node:timers/promises"
import { BIN, cleanEnv } from "../../test/support/cli.js"
import type { Row } from "./types.js"
import { median } from "./stats.js"

const ROOT = path.resolve(import.meta.dirname, "../..")
const RUNTIMES = 20
const RUNS = 5
/** Idle time between ready and SIGINT, so shutdown is not measured against startup leftovers. */
const SETTLE_MS = 300
const READY = / ready epoch=/


const pluginSource = `export default {
  name: "bench-runtimes",
  connectionRuntime: () => Array.from({ length: ${RUNTIMES} }, (_, i) => ({
    name: "bench-" + i,
    start: async () => {},
    close: async () => {},
    isReady: () => true
  }))
}
`

/** A project folder: config (with the runtime plugin or without), data dir inside. */
const project = (withRuntimes: boolean) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pynchy-bench-lifecycle-"))
  const lines = [`dataDir: ${dir}`, "workspaces: [{ id: main }]"]
  if (withRuntimes) {
    fs.writeFileSync(path.join(dir, "runtimes.mjs"), pluginSource)
    lines.push(`plugins: { modules: [${path.join(dir, "runtimes.mjs")}] }`)
  }
  fs.writeFileSync(path.join(dir, "pynchy.yaml"), lines.join("\n") + "\n")
  return dir
}

type Run = { readonly readyMs: number; readonly shutdownMs: number; readonly runtimesStepMs: number; readonly runtimes: number }

/** One host: spawn to the ready line, settle, SIGINT to exit. */
const runHost = (dir: string): Promise<Run> =>
  new Promise((resolve, reject) => {
    const t0 = performance.now()
    const child = spawn(process.execPath, [BIN, "start"], {
      cwd: dir,
      env: { ...cleanEnv(), PYNCHY_CONFIG: path.join(dir, "pynchy.yaml") },
      stdio: ["ignore", "ignore", "pipe"]
    })
    let stderr = ""
    let readyMs: number | undefined
    let signalledAt: number | undefined
    const deadline = setTimeout(() => {
      child.kill("SIGKILL")
      reject(new Error(`pynchy start: no exit within 30 s (ready: ${readyMs !== undefined}); stderr:\n${stderr.slice(-2000)}`))
    }, 30_000)
    child.stderr.setEncoding("utf8")
    child.stderr.on("data", (chunk: string) => {
      stderr += chunk
      if (readyMs !== undefined || !READY.test(stderr)) return
      readyMs = performance.now() - t0
      void sleep(SETTLE_MS).then(() => {
        signalledAt = performance.now()
        child.kill("SIGINT")
      })
    })
    child.on("error", (e) => {
      clearTimeout(deadline)
      reject(e)
    })
    child.on("exit", (code, signal) => {
      clearTimeout(deadline)
      if (readyMs === undefined || signalledAt === undefined || code !== 0) {
        return reject(new Error(`pynchy start exited (code ${code}, signal ${signal}) before the measurement ended; stderr:\n${stderr.slice(-2000)}`))
      }
      const step = /started connection runtimes ms=(\d+)/.exec(stderr)
      resolve({
        readyMs,
        shutdownMs: performance.now() - signalledAt,
        runtimesStepMs: step ? Number(step[1]) : NaN,
        runtimes: (stderr.match(/ runtime ready /g) ?? []).length
      })
    })
  })

const measure = async (withRuntimes: boolean) => {
  const dir = project(withRuntimes)
  try {
    const run = await runHost(dir)
    const expected = withRuntimes ? RUNTIMES : 0
    if (run.runtimes !== expected) throw new Error(`expected ${expected} runtimes ready, the host logged ${run.runtimes}`)
    return run
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

const ensureBundle = () => {
  if (fs.existsSync(path.join(ROOT, "dist/pynchy.cjs"))) return
  const r = spawnSync(process.execPath, ["scripts/build.mjs"], { cwd: ROOT, stdio: ["ignore", "inherit", "inherit"] })
  if (r.status !== 0) throw new Error(`node scripts/build.mjs failed (exit ${r.status})`)
}

export default async (): Promise<Array<Row>> => {
  ensureBundle()
  // One unmeasured run of each warms the page cache; then interleaved, so drift hits both alike.
  await measure(false)
  await measure(true)
  const empty: Array<Run> = []
  const full: Array<Run> = []
  for (let i = 0; i < RUNS; i++) {
    empty.push(await measure(false))
    full.push(await measure(true))
  }
  const n = `median of ${RUNS}`
  const emptyReady = median(empty.map((r) => r.readyMs))
  const fullReady = median(full.map((r) => r.readyMs))
  const emptyShutdown = median(empty.map((r) => r.shutdownMs))
  return [
    { name: `pynchy start, empty host: spawn to ready (${n})`, value: emptyReady, unit: "ms" },
    {
      name: `pynchy start, ${RUNTIMES} connection runtimes: spawn to ready (${n})`,
      value: fullReady,
      unit: "ms",
      baseline: { name: "empty host", value: emptyReady },
      goal: "≤ 100 ms above the empty host"
    },
    { name: `${RUNTIMES} connection runtimes: ready time above the empty host (difference of medians)`, value: fullReady - emptyReady, unit: "ms", goal: "≤ 100 ms" },
    {
      name: `${RUNTIMES} connection runtimes: the host's 'connection runtimes' startup step (${n})`,
      value: median(full.map((r) => r.runtimesStepMs)),
      unit: "ms",
      baseline: { name: "empty host", value: median(empty.map((r) => r.runtimesStepMs)) }
    },
    { name: `pynchy start, empty host: SIGINT to exit (${n})`, value: emptyShutdown, unit: "ms" },
    {
      name: `pynchy start, ${RUNTIMES} connection runtimes: SIGINT to exit (${n})`,
      value: median(full.map((r) => r.shutdownMs)),
      unit: "ms",
      baseline: { name: "empty host", value: emptyShutdown }
    }
  ]
}
