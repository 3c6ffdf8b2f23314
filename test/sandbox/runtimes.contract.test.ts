/** One contract, every container runtime: cleared env, the folders where promised, liveness by id, kill. */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"
import type { SandboxRuntime, SandboxSpec } from "../../src/sandbox/runtime.js"
import * as Bwrap from "../../src/sandbox/runtimes/bwrap.js"
import * as Docker from "../../src/sandbox/runtimes/docker.js"
import { parseProcessId } from "../../src/sandbox/runtimes/procinfo.js"
import * as Process from "../../src/sandbox/runtimes/process.js"
import { tempDir } from "../support/db.js"
import { hasCommand, skipWithout } from "../support/system.js"
import { CONTRACT_PROBE } from "./probes.js"
import { probeScript } from "./support.js"
import { eventually } from "../support/eventually.js"

const dockerEngine = (() => {
  if (!hasCommand("docker")) return false
  try {
    execFileSync("docker", ["info"], { stdio: "ignore", timeout: 10_000 })
    return true
  } catch {
    return false
  }
})()

const TOKEN = "tok-contract-canary-123456"

const setup = Effect.gen(function* () {
  const root = tempDir("pynchy-rt-")
  const dirs = { workspaceDir: path.join(root, "w"), sessionDir: path.join(root, "s"), hostDir: path.join(root, "h"), skill: path.join(root, "skill") }
  for (const d of Object.values(dirs)) fs.mkdirSync(d)
  const turnFile = path.join(dirs.hostDir, "turn.json")
  fs.writeFileSync(turnFile, "{}")
  fs.writeFileSync(path.join(dirs.skill, "SKILL.md"), "---\nname: probe-skill\n---\nthe probe skill\n")
  const ipcSocket = path.join(root, "ipc.sock")
  const ipc = net.createServer((s) => s.destroy()).listen(ipcSocket)
  yield* Effect.addFinalizer(() => Effect.sync(() => ipc.close()))
  const spec = (hang: boolean): SandboxSpec => ({
    sandboxId: Math.random().toString(16).slice(2, 14).padEnd(12, "0"),
    workspaceDir: dirs.workspaceDir,
    sessionDir: dirs.sessionDir,
    hostDir: dirs.hostDir,
    turnFile,
    skills: [{ name: "probe-skill", path: dirs.skill }],
    ipcSocket,
    gatewaySocket: null,
    entry: probeScript(CONTRACT_PROBE),
    env: { PYNCHY_TURN_TOKEN: TOKEN, ...(hang ? { PROBE_HANG: "1" } : {}) }
  })
  return { dirs, spec }
})

const contract = (name: string, make: () => SandboxRuntime, isolates: boolean) => {
  it.scopedLive(`${name}: a cleared env, the workspace rw, the skills ${isolates ? "read-only" : "readable"}`, () =>
    Effect.gen(function* () {
      const { dirs, spec } = yield* setup
      const runtime = make()
      const handle = yield* Effect.promise(() => runtime.start(spec(false)))
      const exit = yield* Effect.promise(() => handle.exited)
      assert.strictEqual(exit.code, 0, fs.readFileSync(path.join(dirs.hostDir, "runner.log"), "utf8"))
      const probe = JSON.parse(fs.readFileSync(path.join(dirs.sessionDir, "probe.json"), "utf8"))
      const allowed = (k: string) => ["PATH", "HOME", "PWD", "PYNCHY_TURN_TOKEN"].includes(k) || k.startsWith("PYNCHY_") || k.startsWith("PROBE_")
      assert.deepStrictEqual(probe.envKeys.filter((k: string) => !allowed(k)), [])
      assert.strictEqual(probe.home, isolates ? "/session" : dirs.sessionDir)
      assert.isTrue(probe.skill)
      if (isolates) assert.notStrictEqual(probe.skillWrite, "ok")
      assert.strictEqual(fs.readFileSync(path.join(dirs.workspaceDir, "from-sandbox.txt"), "utf8"), "hi")
    }))

  it.scopedLive(`${name}: alive by id while running, dead after kill; the token is on no command line`, () =>
    Effect.gen(function* () {
      const { spec } = yield* setup
      const runtime = make()
      const handle = yield* Effect.promise(() => runtime.start(spec(true)))
      yield* Effect.addFinalizer(() => Effect.promise(() => runtime.kill(handle.id)))
      assert.isTrue(yield* Effect.promise(() => runtime.isAlive(handle.id)))
      const pid = parseProcessId(handle.id)?.pid
      if (pid !== undefined) assert.notInclude(fs.readFileSync(`/proc/${pid}/cmdline`, "latin1"), TOKEN)
      yield* Effect.promise(() => runtime.kill(handle.id))
      const exit = yield* Effect.promise(() => handle.exited)
      assert.isTrue(exit.code !== 0 || exit.signal !== null)
      assert.isFalse(yield* Effect.promise(() => runtime.isAlive(handle.id)))
      // A made-up id is simply not alive.
      assert.isFalse(yield* Effect.promise(() => runtime.isAlive(name === "docker" ? "pynchy-000000000000" : "999999:1")))
    }))
}

describe.skipIf(skipWithout("bwrap", "apt-get install bubblewrap"))("bwrap limits", () => {
  it.scopedLive("memory and process limits land in a child cgroup the sandbox runs in (where cgroups are writable)", () =>
    Effect.gen(function* () {
      const { dirs, spec } = yield* setup
      fs.rmSync(path.join(dirs.sessionDir, "probe.json"), { force: true })
      const skipped: Array<string> = []
      const runtime = Bwrap.make({ onLimitsSkipped: (r) => skipped.push(r) })
      const limited = { ...spec(true), memoryMb: 256, maxProcesses: 64 }
      const handle = yield* Effect.promise(() => runtime.start(limited))
      yield* Effect.addFinalizer(() => Effect.promise(() => runtime.kill(handle.id)))
      const pid = parseProcessId(handle.id)!.pid
      // The probe has run (and hangs) once probe.json exists: the launcher joined the cgroup before that.
      yield* eventually(() => fs.existsSync(path.join(limited.sessionDir, "probe.json")) || undefined, { label: "the probe's start" })
      const cgroups = fs.readFileSync(`/proc/${pid}/cgroup`, "utf8")
      if (skipped.length > 0) {
        // CI runs as root, where cgroups are writable: there a skipped limit is a failure.
        if (process.env.PYNCHY_REQUIRE_SYSTEM === "1") assert.fail(`cgroups are required (PYNCHY_REQUIRE_SYSTEM=1) but the limits were skipped: ${skipped.join("; ")}`)
        console.warn(`not checking the limits: ${skipped.join("; ")} (run as root for writable cgroups)`)
        // Not writable here: the sandbox still runs, and the reason was reported.
        assert.notInclude(cgroups, `pynchy-${limited.sandboxId}`)
        return
      }
      assert.include(cgroups, `pynchy-${limited.sandboxId}`)
      const pidsLine = cgroups.split("\n").find((l) => /:pids:/.test(l) || l.startsWith("0::"))!
      const dir = pidsLine.includes(":pids:") ? path.join("/sys/fs/cgroup/pids", pidsLine.split(":")[2]!) : path.join("/sys/fs/cgroup", pidsLine.split(":")[2]!)
      assert.strictEqual(fs.readFileSync(path.join(dir, "pids.max"), "utf8").trim(), "64")
    }))
})

describe("container runtime contract", () => {
  describe.skipIf(skipWithout("bwrap", "apt-get install bubblewrap"))("bwrap", () => contract("bwrap", () => Bwrap.make(), true))
  describe("process", () => contract("process", () => Process.make(), false))
  describe.skipIf(!dockerEngine)("docker (only where a Docker engine answers)", () => contract("docker", () => Docker.make(), true))
})
