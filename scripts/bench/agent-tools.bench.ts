/**
 * Issue 12, item 9: one `bash` tool round trip (`true`) inside bwrap against a bare `bash -c true`
 * on the host; the goal is ≤ 15 ms added at p50. The sandboxed figure is the runner's own tool
 * code (src/agent/tools/bash.ts, bundled like the runner) called in a loop inside a real bwrap
 * sandbox (seccomp, namespaces, the sandbox user when run as root): input check, spawn in its own
 * process group, output collected, group killed, answer built. The same tool on the host, outside
 * any sandbox, is shown too, so the tool's own cost and the sandbox's can be told apart.
 */
import { build } from "esbuild"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import type { SandboxSpec } from "../../src/sandbox/runtime.js"
import * as Bwrap from "../../src/sandbox/runtimes/bwrap.js"
import { median, percentile } from "./stats.js"
import type { Row } from "./types.js"

/** Calls per pass; the three measurements alternate pass by pass, so the machine's load drifts into all of them alike. */
const CALLS = 60
const WARMUP = 10
const PASSES = 4

/**
 * The probe: in mode "tool" the runner's bash tool, in mode "bare" a plain spawn of bash -c true,
 * in a loop; the timings go to the session folder. Both modes run from the same small process, so
 * the baseline pays the same fork cost as the runner would.
 */
const PROBE = `
import { bash } from ${JSON.stringify(path.resolve("src/agent/tools/bash.ts"))}
import { spawn } from "node:child_process"
import * as fs from "node:fs"
const bare = () => new Promise((resolve, reject) => {
  const child = spawn("bash", ["-c", "true"], { stdio: ["ignore", "pipe", "pipe"] })
  child.on("error", reject)
  child.on("close", () => resolve({ ok: true }))
})
const mode = process.env.PROBE_MODE
const xs = []
for (let i = 0; i < ${CALLS + WARMUP}; i++) {
  const t0 = performance.now()
  const out = mode === "bare" ? await bare() : await bash.run({ command: "true" })
  const ms = performance.now() - t0
  if (!out.ok) throw new Error("the tool failed: " + out.output)
  if (i >= ${WARMUP}) xs.push(ms)
}
fs.writeFileSync(process.env.PYNCHY_SESSION_DIR + "/bench-" + mode + ".json", JSON.stringify(xs))
`

const onHost = (entry: string, sessionDir: string, workspaceDir: string, mode: string) =>
  new Promise<void>((resolve, reject) => {
    const child = spawn(process.execPath, [entry], { stdio: "ignore", env: { PATH: "/usr/bin:/bin", PYNCHY_SESSION_DIR: sessionDir, PYNCHY_WORKSPACE_DIR: workspaceDir, PROBE_MODE: mode } })
    child.on("error", reject)
    child.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`the ${mode} probe failed on the host`))))
  })

export default async (): Promise<Array<Row>> => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "pynchy-bench-agent-tools-"))
  const dirs = { workspaceDir: path.join(root, "w"), sessionDir: path.join(root, "s"), hostDir: path.join(root, "h") }
  for (const d of Object.values(dirs)) fs.mkdirSync(d, { mode: 0o700 })
  const entry = path.join(root, "probe.mjs")
  await build({ stdin: { contents: PROBE, resolveDir: process.cwd(), loader: "ts" }, outfile: entry, bundle: true, platform: "node", target: "node20", format: "esm", logLevel: "warning" })
  const turnFile = path.join(dirs.hostDir, "turn.json")
  fs.writeFileSync(turnFile, "{}")
  const ipcSocket = path.join(dirs.hostDir, "ipc.sock")
  const ipc = net.createServer((s) => s.destroy()).listen(ipcSocket)
  try {
    const read = (mode: string): Array<number> => JSON.parse(fs.readFileSync(path.join(dirs.sessionDir, `bench-${mode}.json`), "utf8"))
    const bare: Array<number> = []
    const host: Array<number> = []
    const sandboxed: Array<number> = []
    for (let pass = 0; pass < PASSES; pass++) {
      await onHost(entry, dirs.sessionDir, dirs.workspaceDir, "bare")
      bare.push(...read("bare"))
      await onHost(entry, dirs.sessionDir, dirs.workspaceDir, "tool-host")
      host.push(...read("tool-host"))
      const spec: SandboxSpec = { sandboxId: `be00000000${pass}a`, ...dirs, turnFile, skills: [], ipcSocket, gatewaySocket: null, entry, env: { PROBE_MODE: "tool" } }
      const handle = await Bwrap.make().start(spec)
      const exit = await handle.exited
      if (exit.code !== 0) throw new Error(`the probe failed in bwrap: ${fs.readFileSync(path.join(dirs.hostDir, "runner.log"), "utf8").slice(-1_000)}`)
      sandboxed.push(...read("tool"))
    }
    const baseline = { name: "bare bash -c true (host)", value: median(bare) }
    return [
      { name: "bash tool round trip (true) inside bwrap, p50", value: median(sandboxed), unit: "ms", baseline, goal: "≤ 15 ms over the baseline" },
      { name: "bash tool round trip (true) inside bwrap, p99", value: percentile(sandboxed, 99), unit: "ms", baseline: { name: "bare bash -c true p99", value: percentile(bare, 99) } },
      { name: "bash tool round trip (true) on the host, p50", value: median(host), unit: "ms", baseline },
      { name: "added by the tool in bwrap over bare bash, p50", value: median(sandboxed) - median(bare), unit: "ms", goal: "≤ 15 ms" }
    ]
  } finally {
    ipc.close()
    fs.rmSync(root, { recursive: true, force: true })
  }
}
