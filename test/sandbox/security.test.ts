/**
 * The bwrap sandbox against its promises: a provider key on the host never reaches the sandbox
 * (env, files, /proc/<pid>/environ), no network (a host listener on 127.0.0.1 is unreachable),
 * no writes outside /workspace, /session and the private /tmp.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"
import * as Bwrap from "../../src/sandbox/runtimes/bwrap.js"
import type { SandboxSpec } from "../../src/sandbox/runtime.js"
import { tempDir } from "../support/db.js"
import { skipWithout } from "../support/system.js"
import { SECURITY_PROBE } from "./probes.js"
import { probeScript } from "./support.js"

const CANARY = `sk-canary-${Date.now().toString(36)}-do-not-leak`
// The probe gets the canary in two halves and joins them, so its own env never holds it whole.
const NEEDLE_A = CANARY.slice(0, 12)
const NEEDLE_B = CANARY.slice(12)

const listener = Effect.acquireRelease(
  Effect.async<net.Server>((resume) => {
    const server = net.createServer((s) => s.destroy())
    server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
  }),
  (server) => Effect.sync(() => server.close())
)

describe.skipIf(skipWithout("bwrap", "apt-get install bubblewrap"))("bwrap sandbox security", () => {
  it.scopedLive("no canary, no network, no writes outside its folders", () =>
    Effect.gen(function* () {
      const server = yield* listener
      const port = (server.address() as net.AddressInfo).port
      const root = tempDir("pynchy-sec-")
      const workspaceDir = path.join(root, "workspace")
      const sessionDir = path.join(root, "session")
      fs.mkdirSync(workspaceDir)
      fs.mkdirSync(sessionDir)
      const hostDir = path.join(root, "host")
      fs.mkdirSync(hostDir)
      fs.writeFileSync(path.join(hostDir, "turn.json"), "{}")
      // The canary on the host: in the environment, and in a file next to the sandbox's folders.
      const saved = { o: process.env.OPENAI_API_KEY, a: process.env.ANTHROPIC_API_KEY }
      process.env.OPENAI_API_KEY = CANARY
      process.env.ANTHROPIC_API_KEY = CANARY
      yield* Effect.addFinalizer(() => Effect.sync(() => {
        if (saved.o === undefined) delete process.env.OPENAI_API_KEY
        else process.env.OPENAI_API_KEY = saved.o
        if (saved.a === undefined) delete process.env.ANTHROPIC_API_KEY
        else process.env.ANTHROPIC_API_KEY = saved.a
      }))
      fs.writeFileSync(path.join(root, "pynchy.yaml"), `key: ${CANARY}\n`)
      const ipcSocket = path.join(root, "ipc.sock")
      const ipc = net.createServer((s) => s.destroy()).listen(ipcSocket)
      yield* Effect.addFinalizer(() => Effect.sync(() => ipc.close()))
      const spec: SandboxSpec = {
        sandboxId: "5ec0000000aa",
        workspaceDir,
        sessionDir,
        hostDir,
        turnFile: path.join(hostDir, "turn.json"),
        skills: [],
        ipcSocket,
        gatewaySocket: null,
        entry: probeScript(SECURITY_PROBE),
        env: { PROBE_PORT: String(port), PROBE_NEEDLE_A: NEEDLE_A, PROBE_NEEDLE_B: NEEDLE_B }
      }
      const runtime = Bwrap.make()
      const handle = yield* Effect.promise(() => runtime.start(spec))
      const exit = yield* Effect.promise(() => handle.exited)
      assert.strictEqual(exit.code, 0, fs.readFileSync(path.join(hostDir, "runner.log"), "utf8"))
      const probe = JSON.parse(fs.readFileSync(path.join(sessionDir, "probe.json"), "utf8"))
      assert.deepStrictEqual(probe.found, [], "the canary is visible inside the sandbox")
      assert.notInclude(probe.envKeys, "OPENAI_API_KEY")
      assert.notInclude(probe.envKeys, "ANTHROPIC_API_KEY")
      assert.notEqual(probe.connect, "connected")
      assert.deepStrictEqual(probe.interfaces, ["lo"])
      assert.strictEqual(probe.writes["/workspace/w.txt"], "ok")
      assert.strictEqual(probe.writes["/session/s.txt"], "ok")
      assert.strictEqual(probe.writes["/tmp/t.txt"], "ok")
      for (const outside of ["/usr/x.txt", "/opt/pynchy/x.txt", "/x.txt", "/skills/x.txt", "/run/x.txt", "/etc/x.txt", "/proc/sys/kernel/hostname", "/proc/sys/kernel/core_pattern"]) {
        assert.notStrictEqual(probe.writes[outside], "ok", `wrote ${outside}`)
      }
      // The private /tmp is not the host's.
      assert.isFalse(fs.readdirSync("/tmp").includes("t.txt") && fs.readFileSync("/tmp/t.txt", "utf8") === "x" && fs.statSync("/tmp/t.txt").mtimeMs > Date.now() - 60_000)
      assert.strictEqual(probe.uid, 1000)
      assert.strictEqual(probe.nestedUserns, "refused")
      assert.isTrue(fs.existsSync(path.join(workspaceDir, "w.txt")))
    }))

  it("the arguments unshare every namespace, clear the env, drop capabilities and die with the parent", () => {
    const args = Bwrap.bwrapArgs({
      sandboxId: "000000000001", workspaceDir: "/w", sessionDir: "/s", hostDir: "/h", turnFile: "/h/turn.json", skills: [], ipcSocket: "/i", gatewaySocket: "/g", entry: "/e", env: {}
    }, "/usr/bin/node")
    for (const flag of ["--unshare-all", "--unshare-user", "--disable-userns", "--clearenv", "--die-with-parent", "--new-session"]) assert.include(args, flag)
    assert.strictEqual(args[args.indexOf("--cap-drop") + 1], "ALL")
    assert.strictEqual(args[args.indexOf("/g") + 1], "/run/gateway.sock")
    // Staged (the host is root): every host path is bound from the launcher's tmpfs, none by its own name.
    const staged = Bwrap.bwrapArgs({
      sandboxId: "000000000001", workspaceDir: "/w", sessionDir: "/s", hostDir: "/h", turnFile: "/h/turn.json", skills: [], ipcSocket: "/i", gatewaySocket: "/g", entry: "/e", env: {}
    }, "/usr/bin/node", { staged: true, seccompFd: 4 })
    for (const host of ["/w", "/s", "/h/turn.json", "/i", "/g", "/e"]) assert.notInclude(staged, host)
    assert.strictEqual(staged[staged.indexOf("--seccomp") + 1], "4")
  })
})
