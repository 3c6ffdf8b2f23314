import { assert, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { spawnSync } from "node:child_process"
import { colourOn } from "../../src/cli/run.js"
import { runCli } from "../support/cli.js"
import { tempDir } from "../support/db.js"

describe("pynchy CLI (built bundle, real process)", () => {
  it("--version and --help", async () => {
    const dir = tempDir()
    const v = await runCli(["--version"], { cwd: dir })
    assert.match(v.stdout, /0\.\d+\.\d+/)
    const h = await runCli(["--help"], { cwd: dir })
    for (const cmd of ["start", "send", "status", "config check", "doctor", "plugins"]) assert.include(h.stdout, cmd)
    // The README's command table lists every command the help lists.
    const readme = fs.readFileSync(path.resolve(import.meta.dirname, "../../README.md"), "utf8")
    const commands = [...h.stdout.matchAll(/^ {2}- ((?:[a-z][a-z-]* ?)+)/gm)].map((m) => m[1]!.trim())
    assert.isAbove(commands.length, 5)
    for (const cmd of commands) assert.include(readme, `| \`pynchy ${cmd}`, `README's command table lacks pynchy ${cmd}`)
  })

  it("config check on a broken file lists every error with its path and exits 1", async () => {
    const dir = tempDir()
    fs.writeFileSync(path.join(dir, "pynchy.yaml"), "workspaces:\n  - id: Bad Id\nlimits:\n  maxConcurrentTurns: -1\nroutes:\n  - connection: t\n    place: x\n    workspace: ghost\n")
    const r = await runCli(["config", "check"], { cwd: dir })
    assert.strictEqual(r.code, 1)
    assert.include(r.stderr, "workspaces.0.id")
    assert.include(r.stderr, "limits.maxConcurrentTurns")
  })

  it("config check with no file prints the embedded defaults", async () => {
    const r = await runCli(["config", "check"], { cwd: tempDir() })
    assert.strictEqual(r.code, 0)
    assert.include(r.stdout, "embedded defaults")
    assert.include(r.stdout, "maxConcurrentTurns: 4")
  })

  it("doctor prints one line per check and exits 0 without a fail", async () => {
    const r = await runCli(["doctor"], { cwd: tempDir() })
    assert.strictEqual(r.code, 0, r.stderr)
    for (const name of ["node", "config", "data dir", "sqlite", "sandbox", "llm", "tmux"]) assert.match(r.stdout, new RegExp(`^(ok|warn)\\s+${name}`, "m"))
  })

  it("doctor fails on an unwritable data dir", async () => {
    const dir = tempDir()
    fs.writeFileSync(path.join(dir, "blocker"), "")
    const r = await runCli(["doctor"], { cwd: dir, env: { PYNCHY_DATA_DIR: path.join(dir, "blocker", "sub") } })
    assert.strictEqual(r.code, 1)
    assert.match(r.stdout, /^fail\s+data dir/m)
  })

  it("a usage error prints once, helpfully", async () => {
    const r = await runCli(["nonsense"], { cwd: tempDir() })
    assert.strictEqual(r.code, 2)
    assert.match(r.stderr, /Invalid subcommand for pynchy - use one of 'start'/)
    assert.include(r.stderr, "Run `pynchy --help` for more.")
  })

  it("a parse error is text with the usage of that command, never a logged structure, and exits 2", async () => {
    const missing = await runCli(["send", "hello"], { cwd: tempDir() })
    assert.strictEqual(missing.code, 2)
    assert.strictEqual(missing.stdout, "")
    assert.include(missing.stderr, "Expected to find option: '--conversation'")
    assert.match(missing.stderr, /^\$ pynchy send \(-c, --conversation text\) <text>$/m)
    assert.include(missing.stderr, "Run `pynchy send --help` for more.")
    assert.notMatch(missing.stderr, /_tag|ERROR|\x1b/)

    const nested = await runCli(["config", "check", "--bogus"], { cwd: tempDir() })
    assert.strictEqual(nested.code, 2)
    assert.include(nested.stderr, "Received unknown argument: '--bogus'")
    assert.match(nested.stderr, /^\$ pynchy config check$/m)
  })

  it("--help names the program pynchy, for the root and for nested commands, without colour when piped", async () => {
    const dir = tempDir()
    for (const [args, usage] of [[["--help"], "$ pynchy"], [["start", "--help"], "$ pynchy start [--headless]"], [["config", "check", "-h"], "$ pynchy config check"]] as const) {
      const r = await runCli(args, { cwd: dir })
      assert.strictEqual(r.code, 0, r.stderr)
      assert.include(r.stdout.split("\n"), usage, args.join(" "))
      assert.notInclude(r.stdout, "\x1b", "no colour codes off a terminal")
    }
  })

  it("colour only on a terminal, and never with NO_COLOR set", () => {
    assert.isTrue(colourOn({ isTTY: true }, {}))
    assert.isTrue(colourOn({ isTTY: true }, { NO_COLOR: "" }), "an empty NO_COLOR does not count (no-color.org)")
    assert.isFalse(colourOn({ isTTY: true }, { NO_COLOR: "1" }))
    assert.isFalse(colourOn({ isTTY: false }, {}))
    assert.isFalse(colourOn({}, {}))
  })

  it("config check prints file modes in octal, as written", async () => {
    const dir = tempDir()
    fs.writeFileSync(path.join(dir, "pynchy.yaml"), "gateway:\n  listen: { socket: true, socketMode: 0o640 }\n")
    const r = await runCli(["config", "check"], { cwd: dir })
    assert.strictEqual(r.code, 0, r.stderr)
    assert.match(r.stdout, /^ +socketMode: 0o640$/m)
  })

  it("mcp refuses to create an empty database where nothing says the data dir is", async () => {
    const dir = tempDir()
    const r = await runCli(["mcp"], { cwd: dir })
    assert.strictEqual(r.code, 1)
    assert.include(r.stderr, `no database at ${path.join(dir, ".pynchy", "pynchy.db")}`)
    assert.include(r.stderr, "--data-dir")
    assert.isFalse(fs.existsSync(path.join(dir, ".pynchy")), "nothing was created")
  })

  it("the default data dir is ignored by git", () => {
    const repo = path.resolve(import.meta.dirname, "../..")
    const r = spawnSync("git", ["check-ignore", "-q", ".pynchy/pynchy.db"], { cwd: repo })
    assert.strictEqual(r.status, 0, ".pynchy/ is in .gitignore")
  })
})
