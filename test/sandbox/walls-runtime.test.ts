/**
 * The bwrap walls against a hostile agent (issue 14, findings 2, 4 and 11), by attack on a real
 * bwrap: setuid files it leaves are not root's, the seccomp filter denies what it lists while node
 * still works, a key in the host's session keyring is out of reach, pid 1 inside does not show the
 * host's PATH, per-turn cgroups are gone after the turn, and a forged liveness id signals nothing.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFileSync, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"
import type { SandboxSpec } from "../../src/sandbox/runtime.js"
import * as Bwrap from "../../src/sandbox/runtimes/bwrap.js"
import { CGROUP_PREFIX, parentDirs } from "../../src/sandbox/runtimes/cgroup.js"
import { killProcess, parseProcessId, processAlive, processId, startTimeOf } from "../../src/sandbox/runtimes/procinfo.js"
import * as Process from "../../src/sandbox/runtimes/process.js"
import { hostIsRoot, sandboxUser } from "../../src/system/sandbox-user.js"
import { seccompProgram } from "../../src/sandbox/runtimes/seccomp.js"
import { tempDir } from "../support/db.js"
import { hasCommand, skipWithout } from "../support/system.js"
import { WALLS_PROBE } from "./probes.js"
import { probeScript } from "./support.js"

/** Writes probe.json, leaves a detached child behind if asked, hangs if asked. */
const SIMPLE_PROBE = `
import * as fs from "node:fs"
import { spawn } from "node:child_process"
if (process.env.PROBE_FORK === "1") spawn("/usr/bin/sleep", ["300"], { detached: true, stdio: "ignore" }).unref()
fs.writeFileSync(process.env.PYNCHY_SESSION_DIR + "/probe.json", "{}")
if (process.env.PROBE_HANG === "1") setInterval(() => {}, 1000)
`

const EPERM = "errno:1"
const ENOSYS = "errno:38"
const EAFNOSUPPORT = "errno:97"

/** Folders like the executor's: a 0700 root (as the data dir), a host-only folder, the agent's two folders. */
const setup = (entry: string, env: Record<string, string> = {}) =>
  Effect.gen(function* () {
    const root = tempDir("pynchy-walls-")
    fs.chmodSync(root, 0o700)
    const dirs = { workspaceDir: path.join(root, "workspaces", "w"), sessionDir: path.join(root, "sessions", "s"), hostDir: path.join(root, "sandboxes", "h") }
    for (const d of Object.values(dirs)) fs.mkdirSync(d, { recursive: true, mode: 0o700 })
    const turnFile = path.join(dirs.hostDir, "turn.json")
    fs.writeFileSync(turnFile, "{}", { mode: 0o600 })
    const ipcSocket = path.join(dirs.hostDir, "ipc.sock")
    const ipc = net.createServer((s) => s.destroy()).listen(ipcSocket)
    yield* Effect.addFinalizer(() => Effect.sync(() => ipc.close()))
    const spec = (extra: Partial<SandboxSpec> = {}): SandboxSpec => ({
      sandboxId: Math.random().toString(16).slice(2, 14).padEnd(12, "0"),
      ...dirs,
      turnFile,
      skills: [],
      ipcSocket,
      gatewaySocket: null,
      entry,
      env,
      ...extra
    })
    return { root, dirs, spec }
  })

const runProbe = (spec: SandboxSpec) =>
  Effect.gen(function* () {
    const handle = yield* Effect.promise(() => Bwrap.make().start(spec))
    const exit = yield* Effect.promise(() => handle.exited)
    assert.strictEqual(exit.code, 0, fs.readFileSync(path.join(spec.hostDir, "runner.log"), "utf8"))
    return JSON.parse(fs.readFileSync(path.join(spec.sessionDir, "probe.json"), "utf8"))
  })

describe("seccomp program", () => {
  it("is a whole number of sock_filter entries for x64 and arm64, none for an unknown arch", () => {
    for (const arch of ["x64", "arm64"]) {
      const prog = seccompProgram(arch)!
      assert.strictEqual(prog.length % 8, 0)
      assert.isBelow(prog.length / 8, 256)
    }
    assert.isUndefined(seccompProgram("mips"))
  })
})

describe.skipIf(skipWithout("bwrap", "apt-get install bubblewrap"))("bwrap walls against a hostile agent", () => {
  it.scopedLive("a setuid copy of bash left in /workspace is not root's on the host", () =>
    Effect.gen(function* () {
      const { spec } = yield* setup(probeScript(WALLS_PROBE))
      const s = spec()
      yield* runProbe(s)
      const suid = fs.statSync(path.join(s.workspaceDir, "suid-bash"))
      const sgid = fs.statSync(path.join(s.workspaceDir, "sgid-bash"))
      const user = sandboxUser()
      if (hostIsRoot()) {
        assert.isDefined(user)
        assert.notStrictEqual(suid.uid, 0, "the agent's setuid file is owned by root")
        assert.strictEqual(suid.uid, user!.uid)
        assert.notStrictEqual(sgid.gid, 0, "the agent's setgid file is root's group")
        // The agent's folders are the sandbox user's, the host-only one stays root's.
        assert.strictEqual(fs.statSync(s.workspaceDir).uid, user!.uid)
        assert.strictEqual(fs.statSync(s.hostDir).uid, 0)
      } else {
        assert.strictEqual(suid.uid, process.getuid!())
      }
    }))

  it.scopedLive("the seccomp filter denies keyrings, io_uring, bpf, perf, userfaultfd, personality, netlink and vsock; node still works", () =>
    Effect.gen(function* () {
      const { spec } = yield* setup(probeScript(WALLS_PROBE))
      const probe = yield* runProbe(spec())
      assert.strictEqual(probe.seccomp, "2", "no seccomp filter is loaded")
      const s = probe.sys
      for (const call of ["keyctl", "keyctlRead", "add_key", "request_key", "perf_event_open", "bpf", "userfaultfd", "personalitySet"]) assert.strictEqual(s[call], EPERM, call)
      for (const call of ["io_uring_setup", "io_uring_enter", "io_uring_register"]) assert.strictEqual(s[call], ENOSYS, call)
      assert.strictEqual(s.netlink, EAFNOSUPPORT)
      assert.strictEqual(s.vsock, EAFNOSUPPORT)
      if (process.arch === "x64") assert.strictEqual(s.x32, ENOSYS)
      // What stays allowed: the personality query, unix sockets, node with its thread pool and children.
      assert.strictEqual(s.personalityQuery, "ok")
      assert.strictEqual(s.unix, "ok")
      assert.strictEqual(probe.nodeChild, "node-ok")
      assert.strictEqual(probe.asyncRead, "ok")
      assert.strictEqual(probe.uid, 1000)
    }))

  describe.skipIf(skipWithout("keyctl", "apt-get install keyutils"))("keyring", () => {
    // The test worker has no session keyring of its own, so its processes (and, before, the sandbox
    // as kernel uid 0) search root's user-session keyring and the user keyring linked from it: the
    // key goes there, readable by everyone, the strongest plant.
    it.scopedLive("a key planted in the host's keyrings is neither listed nor readable inside", () =>
      Effect.gen(function* () {
        const desc = `pynchy-canary-${process.pid}`
        const secret = `key-canary-${Date.now().toString(36)}`
        const id = yield* Effect.acquireRelease(
          Effect.sync(() => execFileSync("sh", ["-c", `id=$(keyctl add user '${desc}' '${secret}' @u) && keyctl setperm "$id" 0x3f3f3f3f && echo "$id"`], { encoding: "utf8" }).trim()),
          (k) => Effect.sync(() => void execFileSync("keyctl", ["unlink", k, "@u"], { stdio: "ignore" }))
        )
        // The attack is real: on the host, the key is there to read.
        assert.strictEqual(execFileSync("keyctl", ["print", id], { encoding: "utf8" }).trim(), secret)
        const { spec } = yield* setup(probeScript(WALLS_PROBE), { PROBE_KEY_ID: id })
        const probe = yield* runProbe(spec())
        assert.notInclude(probe.keys, desc, "the host's key is listed in /proc/keys")
        assert.notInclude(probe.keys, id.length > 0 ? Number(id).toString(16).padStart(8, "0") : "-", "the key's serial is listed")
        assert.strictEqual(probe.sys.keyctlRead, EPERM)
        assert.strictEqual(probe.keyctlTool, "failed")
        assert.notInclude(JSON.stringify(probe), secret)
      }))
  })

  it.scopedLive("pid 1 inside shows a fixed PATH, not the host's", () =>
    Effect.gen(function* () {
      const { spec } = yield* setup(probeScript(WALLS_PROBE))
      const probe = yield* runProbe(spec())
      assert.isArray(probe.pid1Environ, `pid 1's environment was not readable (${probe.pid1Environ})`)
      assert.notInclude(probe.pid1Environ, `PATH=${process.env.PATH}`)
      assert.deepStrictEqual(probe.pid1Environ.filter((e: string) => e.startsWith("PATH=")), ["PATH=/usr/bin:/bin"])
      assert.deepStrictEqual([...probe.pid1Environ].sort(), Object.entries(Bwrap.LAUNCH_ENV).map(([k, v]) => `${k}=${v}`).sort())
    }))

  it.scopedLive("after sandboxes with limits (ended, killed, with children left behind), no pynchy cgroup of theirs is left", () =>
    Effect.gen(function* () {
      const { spec } = yield* setup(probeScript(SIMPLE_PROBE))
      const runtime = Bwrap.make()
      const sids: Array<string> = []
      for (let i = 0; i < 6; i++) {
        const s = spec({ memoryMb: 256, maxProcesses: 64, env: { ...(i % 3 === 1 ? { PROBE_HANG: "1" } : {}), ...(i % 3 === 2 ? { PROBE_FORK: "1" } : {}) } })
        sids.push(s.sandboxId)
        const handle = yield* Effect.promise(() => runtime.start(s))
        if (i % 3 === 1) {
          while (!fs.existsSync(path.join(s.sessionDir, "probe.json"))) yield* Effect.sleep("5 millis")
          yield* Effect.promise(() => runtime.kill(handle.id))
        }
        yield* Effect.promise(() => handle.exited)
        fs.rmSync(path.join(s.sessionDir, "probe.json"), { force: true })
      }
      const left = parentDirs().flatMap((dir) => {
        try {
          return fs.readdirSync(dir).filter((n) => sids.some((sid) => n === `${CGROUP_PREFIX}${sid}`))
        } catch {
          return []
        }
      })
      assert.deepStrictEqual(left, [])
    }))
})

describe("kill proves a process is a sandbox of ours", () => {
  it("pid 1 and the host's own pid are never signalled, whatever the id", () => {
    const sent: Array<number> = []
    const spy = (target: number) => void sent.push(target)
    for (const runtime of ["bwrap", "process"]) {
      killProcess(`1:${startTimeOf(1) ?? "0"}`, runtime, spy)
      killProcess(processId(process.pid), runtime, spy)
      killProcess("0:0", runtime, spy)
      killProcess("-1:0", runtime, spy)
    }
    assert.deepStrictEqual(sent, [])
    assert.isFalse(processAlive(`1:${startTimeOf(1) ?? "0"}`, "bwrap"))
  })

  it.scopedLive("a forged id naming an unrelated process (even a session leader) leaves it running", () =>
    Effect.gen(function* () {
      const sleepers = [spawn("/usr/bin/sleep", ["300"], { detached: true, stdio: "ignore" }), spawn("/usr/bin/sleep", ["300"], { stdio: "ignore" })]
      yield* Effect.addFinalizer(() => Effect.sync(() => sleepers.forEach((c) => c.kill("SIGKILL"))))
      const ids = sleepers.map((c) => processId(c.pid!))
      for (const id of ids) {
        for (const runtime of [Bwrap.make(), Process.make()]) {
          yield* Effect.promise(() => runtime.kill(id))
          assert.isFalse(yield* Effect.promise(() => runtime.isAlive(id)))
        }
      }
      for (const c of sleepers) {
        assert.strictEqual(c.exitCode, null)
        assert.strictEqual(c.signalCode, null)
        assert.doesNotThrow(() => process.kill(c.pid!, 0), "the unrelated process was killed")
      }
      assert.isDefined(parseProcessId(ids[0]!))
    }))

  it.scopedLive("a sandbox the runtime started is still killed by its id", () =>
    Effect.gen(function* () {
      const { spec } = yield* setup(probeScript(SIMPLE_PROBE))
      const runtime = hasCommand("bwrap") ? Bwrap.make() : Process.make()
      const s = spec({ env: { PROBE_HANG: "1" } })
      const handle = yield* Effect.promise(() => runtime.start(s))
      while (!fs.existsSync(path.join(s.sessionDir, "probe.json"))) yield* Effect.sleep("5 millis")
      assert.isTrue(yield* Effect.promise(() => runtime.isAlive(handle.id)))
      yield* Effect.promise(() => runtime.kill(handle.id))
      const exit = yield* Effect.promise(() => handle.exited)
      assert.strictEqual(exit.signal, "SIGKILL")
    }))
})
