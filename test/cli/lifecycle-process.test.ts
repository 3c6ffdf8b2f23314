import { assert, describe, it } from "@effect/vitest"
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { git, readMarker } from "../../src/host/DeployRollback.js"
import { BIN, cleanEnv, runCli } from "../support/cli.js"
import { tempDir } from "../support/db.js"
import { repoWithTwoCommits } from "../support/git.js"

/** A plugin module with one runtime whose close never answers. */
const hangingClosePlugin = (dir: string) => {
  const file = path.join(dir, "hang.mjs")
  fs.writeFileSync(file, `export default { name: "hang", connectionRuntime: () => [{ name: "stuck", start: async () => {}, isReady: () => true, close: () => new Promise(() => {}) }] }\n`)
  return file
}

/** Starts `pynchy start`; resolves at its `ready` line, with a way to wait for a later stderr line. */
const startHost = (cwd: string, env: Record<string, string>) =>
  new Promise<{ child: ChildProcess; stderr: () => string; logged: (text: string) => Promise<void> }>((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, "start"], { cwd, env: { ...cleanEnv(), ...env }, stdio: ["ignore", "ignore", "pipe"] })
    let err = ""
    child.stderr!.setEncoding("utf8")
    const logged = (text: string) =>
      new Promise<void>((ok, fail) => {
        const check = () => {
          if (!err.includes(text)) return
          child.stderr!.off("data", check)
          child.off("exit", exited)
          ok()
        }
        const exited = (code: number | null) => fail(new Error(`exited ${code} before logging '${text}': ${err}`))
        child.stderr!.on("data", check)
        child.once("exit", exited)
        check()
      })
    child.stderr!.on("data", (d: string) => {
      err += d
    })
    child.once("exit", (code) => reject(new Error(`exited ${code} before ready: ${err}`)))
    logged(" ready ").then(() => resolve({ child, stderr: () => err, logged }), reject)
  })

const exitOf = (child: ChildProcess) =>
  new Promise<number | null>((resolve) => {
    if (child.exitCode !== null) return resolve(child.exitCode)
    child.once("exit", (code) => resolve(code))
  })

describe("host process lifecycle (real processes)", () => {
  it("a second signal forces the exit while a runtime's close hangs", async () => {
    const dir = tempDir()
    fs.writeFileSync(path.join(dir, "pynchy.yaml"), `limits: { runtimeCloseTimeoutMs: 60000, shutdownTimeoutMs: 60000 }\nplugins: { modules: [${JSON.stringify(hangingClosePlugin(dir))}] }\n`)
    const { child, logged } = await startHost(dir, {})
    child.kill("SIGINT")
    // The first signal has begun the shutdown, and the runtime's close hangs (for 60 s).
    await logged("stopping connection runtimes")
    assert.isNull(child.exitCode, "still shutting down: the close hangs")
    child.kill("SIGINT")
    assert.strictEqual(await exitOf(child), 130)
  })

  it("shutdown is bounded by limits.shutdownTimeoutMs", async () => {
    const dir = tempDir()
    fs.writeFileSync(path.join(dir, "pynchy.yaml"), `limits: { runtimeCloseTimeoutMs: 60000, shutdownTimeoutMs: 500 }\nplugins: { modules: [${JSON.stringify(hangingClosePlugin(dir))}] }\n`)
    const { child } = await startHost(dir, {})
    child.kill("SIGTERM")
    assert.strictEqual(await exitOf(child), 1)
  })

  it("status shows the live runtimes of a running host", async () => {
    const dir = tempDir()
    fs.writeFileSync(path.join(dir, "pynchy.yaml"), `plugins: { modules: [${JSON.stringify(hangingClosePlugin(dir))}] }\nlimits: { runtimeCloseTimeoutMs: 200 }\n`)
    const { child } = await startHost(dir, {})
    const r = await runCli(["status"], { cwd: dir })
    assert.match(r.stdout, /^runtime {3}stuck \(hang\): ready since /m)
    assert.match(r.stdout, /^host {6}ready \(pid \d+/m)
    child.kill("SIGINT")
    assert.strictEqual(await exitOf(child), 0)
    assert.match((await runCli(["status"], { cwd: dir })).stdout, /stopped \d{4}-/)
  })

  it("pynchy deploy, then a failing start: rolled back to the previous commit, exit 75", async () => {
    const { repo, previous, next, run: g } = repoWithTwoCommits()
    g("checkout", "--quiet", "--detach", previous)

    const dir = tempDir()
    const deployed = await runCli(["deploy", next, "--repo", repo], { cwd: dir })
    assert.strictEqual(deployed.code, 0, deployed.stderr)
    assert.strictEqual(g("rev-parse", "HEAD"), next)
    assert.strictEqual(readMarker(path.join(dir, ".pynchy")).pipe((m) => (m._tag === "Some" ? m.value.previous : "")), previous)

    // The new version cannot start: a plugin module it names does not exist.
    fs.writeFileSync(path.join(dir, "pynchy.yaml"), "plugins: { modules: [./missing-plugin.mjs] }\n")
    const started = await runCli(["start"], { cwd: dir })
    assert.strictEqual(started.code, 75, started.stderr)
    assert.include(started.stderr, "rolled back")
    assert.strictEqual(g("rev-parse", "HEAD"), previous)
    assert.isTrue(readMarker(path.join(dir, ".pynchy"))._tag === "None")
  })

  it("deploy refuses a dirty checkout and an unknown revision, naming the problem", async () => {
    const repo = tempDir("pynchy-repo-")
    git(repo, ["init", "--quiet"])
    git(repo, ["config", "user.email", "t@example.invalid"])
    git(repo, ["config", "user.name", "t"])
    fs.writeFileSync(path.join(repo, "f"), "1")
    git(repo, ["add", "f"])
    git(repo, ["commit", "--quiet", "-m", "one"])
    const unknown = await runCli(["deploy", "nope", "--repo", repo], { cwd: tempDir() })
    assert.strictEqual(unknown.code, 1)
    assert.include(unknown.stderr, "unknown revision 'nope'")
    fs.writeFileSync(path.join(repo, "f"), "2")
    const dirty = await runCli(["deploy", "HEAD", "--repo", repo], { cwd: tempDir() })
    assert.strictEqual(dirty.code, 1)
    assert.include(dirty.stderr, "uncommitted changes")
  })
})
