/**
 * The first run of a new user, in a real terminal (tmux on a private server): `pynchy start` opens
 * the chat with or without a config file, a reply comes in, the host's log goes to a file while
 * its warnings and other connections' replies print above the prompt without breaking what is
 * being typed, and Ctrl-C leaves cleanly. `--headless` logs to the terminal instead.
 */
import { afterAll, assert, describe, it } from "vitest"
import { execFileSync } from "node:child_process"
import { Duration } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { BIN, runCli } from "../support/cli.js"
import { tempDir } from "../support/db.js"
import { waitFor } from "../support/eventually.js"
import { skipWithout } from "../support/system.js"

const REPO = path.resolve(import.meta.dirname, "../..")
const skip = skipWithout("tmux", "apt-get install tmux")
const SERVER = `pynchy-first-run-${process.pid}`
// Bounds, not measurements: a loaded machine may take long to start a host; a miss shows the screen.
const DEADLINE_MS = 120_000
const TEST_TIMEOUT_MS = 360_000

const tmux = (...args: Array<string>) => execFileSync("tmux", ["-L", SERVER, ...args], { encoding: "utf8" })
const screen = (name: string) => tmux("capture-pane", "-p", "-J", "-t", name)

/** Waits until the screen matches (bounded: a miss fails with what the screen showed last). */
const until = (name: string, re: RegExp): Promise<string> =>
  waitFor(`${re} on the screen of ${name}`, () => {
    const shown = screen(name)
    if (!re.test(shown)) throw new Error(`it showed:\n${shown}`)
    return shown
  }, Duration.millis(DEADLINE_MS))

/** Runs `command` in a new terminal with exactly `env` (plus PATH and HOME), then prints its exit status. */
const openTerminal = (name: string, cwd: string, env: Record<string, string>, command: string) => {
  const vars = Object.entries({ PATH: process.env.PATH ?? "", HOME: tempDir("pynchy-home-"), TERM: "xterm-256color", ...env }).map(([k, v]) => `${k}='${v}'`)
  tmux("new-session", "-d", "-s", name, "-x", "200", "-y", "40", "-c", cwd, `env -i ${vars.join(" ")} ${command}; echo "EXITED $?"; sleep 600`)
}

const lastLine = (text: string) => text.trimEnd().split("\n").at(-1)

describe.skipIf(skip)("the first run: pynchy start in a terminal", () => {
  afterAll(() => {
    try {
      tmux("kill-server")
    } catch {
      // No session was opened.
    }
  })

  it("without a config file: the chat opens, the host's log is a file, the no-provider notice answers, Ctrl-C leaves", async () => {
    const dir = tempDir("pynchy-first-")
    openTerminal("bare", dir, {}, `${process.execPath} ${BIN} start`)
    const opened = await until("bare", /^you›\s*$/m)
    const log = path.join(dir, ".pynchy", "pynchy.log")
    assert.include(opened, `host log: ${log}`)
    assert.notMatch(opened, / INFO /, "the host's INFO lines go to the log file, not the screen")
    tmux("send-keys", "-t", "bare", "hello", "Enter")
    await until("bare", /^pynchy› No LLM provider is configured.*\nyou›/m)
    tmux("send-keys", "-t", "bare", "C-c")
    assert.match(await until("bare", /EXITED \d+/), /EXITED 0/)
    const logged = fs.readFileSync(log, "utf8")
    assert.match(logged, /INFO +ready epoch=/)
    assert.match(logged, /INFO +stopping config/)
  }, TEST_TIMEOUT_MS)

  it("npm start with a config file: the chat opens, replies come in, lines from elsewhere print above the prompt and keep the draft", async () => {
    const dir = tempDir("pynchy-first-")
    const config = path.join(dir, "pynchy.yaml")
    fs.writeFileSync(config, `dataDir: ${dir}/data\nworkspaces: [{ id: main, agentCore: scripted }]\n`)
    openTerminal("configured", REPO, { PYNCHY_CONFIG: config }, "npm start")
    const opened = await until("configured", /^you›\s*$/m)
    assert.include(opened, `host log: ${path.join(dir, "data", "pynchy.log")}`)
    assert.notMatch(opened, / INFO /)

    tmux("send-keys", "-t", "configured", "hello", "Enter")
    await until("configured", /^pynchy› echo: hello\nyou›\s*$/m)

    // A draft on the prompt, then a reply for the `cli` connection (pynchy send) and a warning (a failed turn).
    tmux("send-keys", "-t", "configured", "half a thought")
    await until("configured", /^you› half a thought$/m)
    const send = async (conversation: string, text: string) => {
      const r = await runCli(["send", "-c", conversation, text], { cwd: dir, env: { PYNCHY_CONFIG: config } })
      assert.strictEqual(r.code, 0, r.stderr)
    }
    await send("cli:default", "from outside")
    const printed = await until("configured", /^\[cli:default\] echo: from outside\n(?:.*\n)*you› half a thought\s*$/m)
    assert.strictEqual(lastLine(printed), "you› half a thought")
    await send("terminal:default", "!fatal")
    const warned = await until("configured", /WARN +turn attempt failed.*\n(?:.*\n)*you› half a thought\s*$/)
    assert.strictEqual(lastLine(warned), "you› half a thought")
    assert.notInclude(warned, "half a thought[", "nothing was written over the draft")

    // The draft was kept: Enter sends it whole.
    tmux("send-keys", "-t", "configured", "Enter")
    await until("configured", /^pynchy› echo: half a thought\nyou›\s*$/m)
    tmux("send-keys", "-t", "configured", "C-c")
    assert.match(await until("configured", /EXITED \d+/), /EXITED 0/)
  }, TEST_TIMEOUT_MS)

  it("--headless logs to the terminal and has no prompt; Ctrl-C stops the host in order", async () => {
    const dir = tempDir("pynchy-first-")
    openTerminal("headless", dir, {}, `${process.execPath} ${BIN} start --headless`)
    const ready = await until("headless", /INFO +ready epoch=/)
    assert.notMatch(ready, /you›/)
    tmux("send-keys", "-t", "headless", "C-c")
    const stopped = await until("headless", /EXITED \d+/)
    assert.match(stopped, /INFO +stopping config/)
    assert.isFalse(fs.existsSync(path.join(dir, ".pynchy", "pynchy.log")))
  }, TEST_TIMEOUT_MS)
})
