/**
 * No user-facing output carries stack frames: each failing path a new user met runs as a real
 * process (the built CLI), and no line of its stdout or stderr looks like `    at fn (file:1:2)`.
 * Each also says what is wrong in words, and `keys` works in a fresh folder as start would.
 */
import { afterAll, assert, describe, it } from "vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { type CliResult, runCli } from "../support/cli.js"
import { tempDir } from "../support/db.js"
import { killAllHosts, startHost, stopHost } from "../channels/host-process.js"

const FRAME = /^\s+at .+:\d+:\d+\)?$/m

const noFrames = (what: string, r: CliResult) => {
  const out = `${r.stdout}\n${r.stderr}`
  assert.notMatch(out, FRAME, `${what} printed a stack frame:\n${out.slice(-3000)}`)
}

/** A fresh folder holding `yaml` as its pynchy.yaml (none when undefined). */
const folder = (yaml?: string) => {
  const dir = tempDir("pynchy-frames-")
  if (yaml !== undefined) fs.writeFileSync(path.join(dir, "pynchy.yaml"), yaml)
  return dir
}

/** The folder's own config when it has one (a fresh folder has none: the embedded defaults). */
const env = (dir: string, extra: Record<string, string> = {}) => ({
  ...(fs.existsSync(path.join(dir, "pynchy.yaml")) ? { PYNCHY_CONFIG: path.join(dir, "pynchy.yaml") } : {}),
  PYNCHY_EXECUTOR: "scripted",
  ...extra
})

afterAll(killAllHosts)

describe("failing commands print what is wrong, never stack frames", () => {
  it("start on a bad config: every problem, one line each", async () => {
    const dir = folder("limits: { maxConcurrentTurns: 0 }\nworkspaces: [{ id: main, modle: x }]\n")
    const r = await runCli(["start", "--headless"], { cwd: dir, env: env(dir) })
    noFrames("start", r)
    assert.strictEqual(r.code, 1)
    assert.match(r.stderr, /limits\.maxConcurrentTurns: wrong value/)
    assert.match(r.stderr, /workspaces\.0\.modle: unknown key; did you mean 'model'\?/)
  }, 90_000)

  it("config check on an alias to nothing and on an alias bomb: one line each", async () => {
    const unresolved = folder("x: *nothere\n")
    const a = await runCli(["config", "check"], { cwd: unresolved, env: env(unresolved) })
    noFrames("config check (undefined alias)", a)
    assert.strictEqual(a.code, 1)
    assert.match(a.stderr, /line 1:4: alias \*nothere names no anchor/)
    const levels = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    for (const [p, n] of [["a", "b"], ["b", "c"], ["c", "d"], ["d", "e"], ["e", "f"], ["f", "g"]]) levels.push(`${n}: &${n} [${Array(9).fill(`*${p}`).join(", ")}]`)
    const bomb = folder(levels.join("\n") + "\n")
    const b = await runCli(["config", "check"], { cwd: bomb, env: env(bomb) })
    noFrames("config check (alias bomb)", b)
    assert.strictEqual(b.code, 1)
    assert.match(b.stderr, /aliases expand to too many nodes/)
  }, 90_000)

  it("keys create and keys list in a fresh folder work as after a first start", async () => {
    const dir = folder()
    const created = await runCli(["keys", "create", "--name", "tools"], { cwd: dir, env: env(dir) })
    noFrames("keys create", created)
    assert.strictEqual(created.code, 0, created.stderr)
    assert.match(created.stdout, /^pgk_/)
    const fresh = folder()
    const listed = await runCli(["keys", "list"], { cwd: fresh, env: env(fresh) })
    noFrames("keys list", listed)
    assert.strictEqual(listed.code, 0, listed.stderr)
  }, 90_000)

  it("trace of something unknown says so in a line", async () => {
    const dir = folder()
    const r = await runCli(["trace", "nothing-here"], { cwd: dir, env: env(dir) })
    noFrames("trace", r)
    assert.strictEqual(r.code, 1)
    assert.match(r.stderr, /nothing known as 'nothing-here'/)
  }, 90_000)

  it("a connection that cannot reach its platform at start: one line naming it, why, and how to start without it", async () => {
    const dir = folder("connections:\n  tg: { kind: telegram, tokenEnv: PYNCHY_TEST_TG_TOKEN, apiRoot: 'http://127.0.0.1:9' }\nroutes:\n  - { connection: tg, place: '*', workspace: main }\n")
    const r = await runCli(["start", "--headless"], { cwd: dir, env: env(dir, { PYNCHY_TEST_TG_TOKEN: "123:abc" }) })
    noFrames("start (unreachable platform)", r)
    assert.notStrictEqual(r.code, 0)
    assert.match(r.stderr, /connection 'tg' \(plugin 'telegram'\) could not start .*unreachable.*enabled: false on its routes/)
  }, 90_000)

  it("a second chat while a host runs on the same data dir", async () => {
    const dir = folder("workspaces: [{ id: main }]\n")
    const host = await startHost(dir, { PYNCHY_EXECUTOR: "scripted" })
    try {
      const r = await runCli(["chat"], { cwd: dir, env: env(dir), input: "hello\n" })
      noFrames("second chat", r)
      assert.notStrictEqual(r.code, 0)
      assert.match(r.stderr, /another process|already running/)
    } finally {
      await stopHost(host)
    }
  }, 120_000)
})
