/**
 * Where agents would run unisolated (`containerRuntime: auto` without bwrap) `doctor`, `start` and
 * the chat banner say so; a bwrap that is installed but broken is a doctor failure; `process`
 * chosen in config is silent. An empty PATH is a machine without bwrap.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { PassThrough } from "node:stream"
import { startChatUi } from "../../src/channels/terminal/chat-ui.js"
import { sandboxCheck } from "../../src/cli/commands/doctor-checks.js"
import { UNISOLATED_WARNING } from "../../src/sandbox/select.js"
import { BIN, cleanEnv, runCli } from "../support/cli.js"
import { tempDir } from "../support/db.js"

const noBwrap = () => ({ PATH: tempDir() })
const withConfig = (yaml: string) => {
  const dir = tempDir()
  fs.writeFileSync(path.join(dir, "pynchy.yaml"), yaml)
  return dir
}
const sandboxLine = (stdout: string) => stdout.split("\n").find((l) => /^\w+\s+sandbox\s/.test(l)) ?? ""

/** Runs `pynchy start` until it is ready, stops it, and hands back its stderr. */
const startAndStop = (cwd: string, env: Record<string, string>) =>
  new Promise<string>((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, "start"], { cwd, env: { ...cleanEnv(), ...env }, stdio: ["ignore", "ignore", "pipe"] })
    let err = ""
    let ready = false
    child.stderr.setEncoding("utf8")
    child.stderr.on("data", (d: string) => {
      err += d
      if (!ready && err.includes(" ready ")) {
        ready = true
        child.kill("SIGTERM")
      }
    })
    child.once("exit", () => (ready ? resolve(err) : reject(new Error(`exited before ready: ${err}`))))
  })

describe("sandbox warnings (built CLI, real processes)", () => {
  it("doctor: auto without bwrap is a warning that agents run unisolated", async () => {
    const r = await runCli(["doctor"], { cwd: tempDir(), env: noBwrap() })
    assert.strictEqual(r.code, 0, r.stderr)
    assert.match(sandboxLine(r.stdout), /^warn\s+sandbox\s+agents run UNISOLATED .*\(fix: apt-get install bubblewrap\)$/)
  })

  // The probe runs the bwrap the sandbox runtime runs, not the first one on PATH, so a broken
  // bwrap cannot be planted for the real process: the check is driven in-process instead.
  it.effect("doctor: bwrap installed but unable to start a sandbox is a failure (turns fail closed)", () =>
    Effect.gen(function* () {
      const probe = { installed: () => true, available: () => Promise.resolve({ ok: false, reason: "bwrap cannot create namespaces here" }) }
      for (const containerRuntime of ["auto", "bwrap"]) {
        const check = yield* sandboxCheck({ containerRuntime, workspaces: [] }, probe)
        assert.strictEqual(check.verdict, "fail")
        assert.strictEqual(check.detail, "bwrap is installed but cannot start a sandbox here (bwrap cannot create namespaces here): turns fail with sandbox_unavailable")
      }
      const explicitMissing = yield* sandboxCheck({ containerRuntime: "bwrap", workspaces: [] }, { ...probe, installed: () => false })
      assert.deepStrictEqual([explicitMissing.verdict, explicitMissing.fix], ["fail", "apt-get install bubblewrap"])
    }))

  it("doctor: containerRuntime process chosen in config is ok and says nothing loud", async () => {
    const r = await runCli(["doctor"], { cwd: withConfig("containerRuntime: process\n"), env: noBwrap() })
    assert.strictEqual(r.code, 0, r.stderr)
    assert.match(sandboxLine(r.stdout), /^ok\s+sandbox\s+containerRuntime: process \(process chosen in config/)
    assert.notInclude(r.stdout, "UNISOLATED")
  })

  it("start: one WARN line before ready when auto has no bwrap; none when process is chosen", async () => {
    const warned = await startAndStop(withConfig("limits: { shutdownTimeoutMs: 5000 }\n"), noBwrap())
    const lines = warned.split("\n").filter((l) => l.includes("UNISOLATED"))
    assert.strictEqual(lines.length, 1, warned)
    assert.match(lines[0]!, /^\S+ WARN\s+agents run UNISOLATED .*apt-get install bubblewrap/)
    assert.isBelow(warned.indexOf("UNISOLATED"), warned.indexOf(" ready "))
    const chosen = await startAndStop(withConfig("containerRuntime: process\nlimits: { shutdownTimeoutMs: 5000 }\n"), noBwrap())
    assert.notInclude(chosen, "UNISOLATED")
    assert.notMatch(chosen, / WARN .*sandbox/i)
  })

  it("chat banner: the warning is shown under the title in a terminal", async () => {
    const tty = <S extends PassThrough>(s: S) => Object.assign(s, { isTTY: true })
    const input = tty(new PassThrough())
    const output = tty(new PassThrough())
    let shown = ""
    output.on("data", (d: Buffer) => (shown += d.toString("utf8")))
    const ui = startChatUi({ input, output, send: () => Promise.resolve(), warning: UNISOLATED_WARNING })
    ui.close()
    await ui.done
    const lines = shown.split("\n")
    assert.match(lines[0]!, /^pynchy chat — /)
    assert.include(lines[1], `WARNING: ${UNISOLATED_WARNING}`)
    const plain = startChatUi({ input: tty(new PassThrough()), output: tty(new PassThrough()), send: () => Promise.resolve() })
    plain.close()
    await plain.done
  })
})
