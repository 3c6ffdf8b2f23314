import { assert, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { runCli } from "../support/cli.js"
import { tempDir } from "../support/db.js"

describe("pynchy CLI (built bundle, real process)", () => {
  it("--version and --help", () => {
    const dir = tempDir()
    const v = runCli(["--version"], { cwd: dir })
    assert.match(v.stdout, /0\.\d+\.\d+/)
    const h = runCli(["--help"], { cwd: dir })
    for (const cmd of ["start", "send", "status", "config check", "doctor", "plugins"]) assert.include(h.stdout, cmd)
  })

  it("config check on a broken file lists every error with its path and exits 1", () => {
    const dir = tempDir()
    fs.writeFileSync(path.join(dir, "pynchy.yaml"), "workspaces:\n  - id: Bad Id\nlimits:\n  maxConcurrentTurns: -1\nroutes:\n  - connection: t\n    place: x\n    workspace: ghost\n")
    const r = runCli(["config", "check"], { cwd: dir })
    assert.strictEqual(r.code, 1)
    assert.include(r.stderr, "workspaces.0.id")
    assert.include(r.stderr, "limits.maxConcurrentTurns")
  })

  it("config check with no file prints the embedded defaults", () => {
    const r = runCli(["config", "check"], { cwd: tempDir() })
    assert.strictEqual(r.code, 0)
    assert.include(r.stdout, "embedded defaults")
    assert.include(r.stdout, "maxConcurrentTurns: 4")
  })

  it("doctor prints one line per check and exits 0 without a fail", () => {
    const r = runCli(["doctor"], { cwd: tempDir() })
    assert.strictEqual(r.code, 0, r.stderr)
    for (const name of ["node", "config", "data dir", "sqlite", "sandbox", "llm", "tmux"]) assert.match(r.stdout, new RegExp(`^(ok|warn)\\s+${name}`, "m"))
  })

  it("doctor fails on an unwritable data dir", () => {
    const dir = tempDir()
    fs.writeFileSync(path.join(dir, "blocker"), "")
    const r = runCli(["doctor"], { cwd: dir, env: { PYNCHY_DATA_DIR: path.join(dir, "blocker", "sub") } })
    assert.strictEqual(r.code, 1)
    assert.match(r.stdout, /^fail\s+data dir/m)
  })

  it("a usage error prints once, helpfully", () => {
    const r = runCli(["nonsense"], { cwd: tempDir() })
    assert.notStrictEqual(r.code, 0)
    const text = r.stdout + r.stderr
    assert.match(text, /nonsense|Invalid|unknown/i)
  })
})
