/**
 * Every shell command the README shows runs somewhere: here (as written, from the repo root), in
 * .ci/run, or in the test named for it. A command added to the README without a place in `HOW`
 * fails this test, so the README cannot promise a command nobody runs.
 */
import { Effect } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "vitest"
import { cleanEnv } from "../support/cli.js"
import { tempDir } from "../support/db.js"
import { eventually } from "../support/eventually.js"

const REPO = path.resolve(import.meta.dirname, "../..")
const README = fs.readFileSync(path.join(REPO, "README.md"), "utf8")
const read = (file: string) => fs.readFileSync(path.join(REPO, file), "utf8")

/** The README's commands: indented code lines and inline code that starts with npm or npx. */
const readmeCommands = (): Array<string> => {
  const indented = [...README.matchAll(/^ {4}((?:npm|npx) [^\n#]*?)\s*(?:#.*)?$/gm)].map((m) => m[1]!.trim())
  const inline = [...README.matchAll(/`((?:npm|npx) [^`]+)`/g)].map((m) => m[1]!.trim())
  return [...new Set([...indented, ...inline])]
}

/**
 * Runs a README command line as a shell would, from the repo root; its exit code and output.
 * Asynchronous: a synchronous spawn of a minute-long command blocks the test worker, which then
 * misses vitest's RPC deadlines on a loaded machine.
 */
const sh = (line: string, env: Record<string, string> = {}) =>
  new Promise<{ code: number | null; out: string }>((resolve) => {
    const child = spawn("bash", ["-c", line], { cwd: REPO, env: { ...cleanEnv(), ...env }, timeout: 120_000 })
    let out = ""
    child.stdout.on("data", (d) => (out += d))
    child.stderr.on("data", (d) => (out += d))
    child.on("close", (code) => resolve({ code, out }))
  })

type How = { readonly run: () => void | Promise<void> } | { readonly in: string; readonly because: string }

/** `npm start -- --headless` as written: ready, then stopped in order by Ctrl-C (SIGINT to its process group). */
const headlessStart = () => {
  const dataDir = tempDir()
  const child = spawn("bash", ["-c", "npm start -- --headless"], { cwd: REPO, env: { ...cleanEnv(), PYNCHY_DATA_DIR: dataDir }, detached: true, stdio: ["ignore", "pipe", "pipe"] })
  let log = ""
  child.stdout.on("data", (d) => (log += String(d)))
  child.stderr.on("data", (d) => (log += String(d)))
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  return Effect.runPromise(
    Effect.gen(function* () {
      yield* eventually(() => (/INFO +ready/.test(log) ? true : undefined), { label: "`npm start -- --headless` ready" })
      // Ctrl-C reaches the whole foreground group: npm dies of it, the host shuts down in order.
      process.kill(-child.pid!, "SIGINT")
      yield* eventually(() => (/stopping config/.test(log) ? true : undefined), { label: "the host's orderly shutdown after Ctrl-C" })
      yield* Effect.promise(() => exited)
      assert.notMatch(log, /level=ERROR|ERROR /, log)
    }).pipe(Effect.ensuring(Effect.sync(() => {
      try {
        process.kill(-child.pid!, "SIGKILL")
      } catch {
        // already gone
      }
    })))
  )
}

const HOW: Record<string, How> = {
  "npm ci && npm start": { in: "test/cli/first-run.tmux.test.ts", because: "it runs `npm start` in a real terminal (npm ci is .ci/run's first step)" },
  "npm ci && npm test": { in: ".ci/run", because: "CI is npm ci, then the test command" },
  "npm start": { in: "test/cli/first-run.tmux.test.ts", because: "it runs `npm start` in a real terminal" },
  "npm start -- --headless": { run: () => headlessStart() },
  "npm ci": { in: ".ci/run", because: "CI's install step" },
  "npm ci --prefix plugins/claude-code": { in: ".ci/run", because: "CI installs the optional claude-code plugin before the tests (test/sandbox/claude-code.test.ts needs it)" },
  "npm run bench": { in: "npm run bench -- plugins", because: "the same runner with a filter; every suite takes minutes, so CI runs one" },
  "npm run bench -- plugins": {
    run: async () => {
      const r = await sh("npm run bench -- plugins")
      assert.strictEqual(r.code, 0, r.out)
      assert.match(r.out, /plugins +plugins: discovery/)
    }
  },
  "npx tsx scripts/crash/driver.ts --kills 500 [--non-idempotent]": {
    run: async () => {
      // The same drill with fewer kills (test/crash runs it at length).
      const r = await sh("npx tsx scripts/crash/driver.ts --kills 2")
      assert.strictEqual(r.code, 0, r.out)
      assert.match(r.out, /"kills": \d+/)
    }
  },
  "npx pynchy ...": {
    run: async () => {
      // npx installs a checkout into its cache once and keeps the bin link it made then: a renamed
      // entry point breaks `npx pynchy` in every checkout that had run it (CI's among them).
      assert.deepStrictEqual(JSON.parse(read("package.json")).bin, { pynchy: "./bin/pynchy.js" })
      const r = await sh("npx pynchy --version")
      assert.strictEqual(r.code, 0, r.out)
      assert.match(r.out, /\d+\.\d+\.\d+/)
    }
  },
  "npm run pynchy -- ...": {
    run: async () => {
      const r = await sh("npm run pynchy -- --version")
      assert.strictEqual(r.code, 0, r.out)
      assert.match(r.out, /\d+\.\d+\.\d+/)
    }
  }
}

describe("the README's shell commands", () => {
  it("each has a place where it runs", () => {
    const missing = readmeCommands().filter((c) => HOW[c] === undefined)
    assert.deepStrictEqual(missing, [], "README commands with no place in HOW (test/docs/readme-commands.test.ts)")
    for (const [command, how] of Object.entries(HOW)) {
      if ("in" in how && how.in.endsWith(".ts")) assert.include(read(how.in), command.includes("npm start") ? "npm start" : command, `${how.in} (${how.because})`)
      if ("in" in how && how.in === ".ci/run") assert.match(read(".ci/run"), /npm ci[\s\S]*vitest run/, how.because)
      if ("in" in how && how.in.startsWith("npm ")) assert.isDefined(HOW[how.in], `${command} stands in for ${how.in}, which runs here`)
    }
  })

  for (const [command, how] of Object.entries(HOW)) {
    if (!("run" in how)) continue
    it(`runs: ${command}`, { timeout: 120_000 }, how.run)
  }
})
