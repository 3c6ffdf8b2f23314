/**
 * `pynchy chat` in a real terminal (tmux send-keys / capture-pane): prompt, status while the agent
 * works, the reply, history across runs, clean Ctrl-C. Without a TTY it reads stdin lines. With
 * `--connect` it talks to a running host (the real bin) through the HTTP API connection.
 */
import { afterAll, assert, describe, it } from "vitest"
import { Effect } from "effect"
import { execFileSync, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { hashToken } from "../../src/channels/http/settings.js"
import { cleanEnv } from "../support/cli.js"
import { tempDir } from "../support/db.js"
import { eventually } from "../support/eventually.js"
import { freePort } from "../support/synapse.js"
import { skipWithout } from "../support/system.js"
import { killAllHosts, startHost, stopHost } from "./host-process.js"

const ENTRY = path.resolve(import.meta.dirname, "chat-entry.ts")
const REPO = path.resolve(import.meta.dirname, "../..")
const skip = skipWithout("tmux", "apt-get install tmux")
/** Each test starts `pynchy chat` under tsx (and one a host) as real processes: under load, one start alone can take half a minute. */
const PROCESS_TEST_TIMEOUT = 180_000

const tmux = (...args: Array<string>) => execFileSync("tmux", args, { encoding: "utf8" })
const pane = (name: string) => tmux("capture-pane", "-p", "-t", name)
const until = (name: string, re: RegExp) =>
  Effect.runPromise(eventually(() => {
    const text = pane(name)
    return re.test(text) ? text : undefined
  }, { label: `${re} in tmux pane ${name}` }))

const chatIn = (name: string, dir: string, env: Record<string, string>) => {
  const envArgs = Object.entries({ PYNCHY_CONFIG: path.join(dir, "pynchy.yaml"), ...env }).map(([k, v]) => `${k}=${v}`)
  tmux("new-session", "-d", "-s", name, "-x", "120", "-y", "30", "-c", REPO,
    `env ${envArgs.join(" ")} ${process.execPath} --import tsx ${ENTRY} chat; echo "EXITED $?"; sleep 600`)
}

describe.skipIf(skip)("pynchy chat in a terminal", () => {
  it("prompt, a visible status while the agent works, the reply, history, clean Ctrl-C", { timeout: PROCESS_TEST_TIMEOUT }, async () => {
    const dir = tempDir()
    fs.writeFileSync(path.join(dir, "pynchy.yaml"), `dataDir: ${dir}\n`)
    const name = `chat-${process.pid}`
    chatIn(name, dir, { PYNCHY_SCRIPTED_DELAY_MS: "1500" })
    try {
      await until(name, /^you›\s*$/m)
      tmux("send-keys", "-t", name, "hello there", "Enter")
      await until(name, /working…/)
      // The reply, then the next prompt under it (drawn just after the reply: waited for, not raced).
      await until(name, /you› hello there\npynchy› echo: hello there\nyou›/)
      tmux("send-keys", "-t", name, "C-c")
      const exited = await until(name, /EXITED \d+/)
      assert.match(exited, /EXITED 0/)
    } finally {
      tmux("kill-session", "-t", name)
    }
    assert.strictEqual(fs.readFileSync(path.join(dir, "chat-history"), "utf8"), "hello there\n")

    // A second run: the history is back (Up), and the conversation continues.
    const again = `${name}-2`
    chatIn(again, dir, {})
    try {
      await until(again, /^you›\s*$/m)
      tmux("send-keys", "-t", again, "Up")
      await until(again, /you› hello there$/m)
      tmux("send-keys", "-t", again, "C-u", "/exit", "Enter")
      assert.match(await until(again, /EXITED \d+/), /EXITED 0/)
    } finally {
      tmux("kill-session", "-t", again)
    }
  })
})

describe.skipIf(skip)("pynchy chat streams a reply as it is written", () => {
  it("streamed text appears before the reply is recorded, and the reply confirms or replaces it: shown once", { timeout: PROCESS_TEST_TIMEOUT }, async () => {
    const dir = tempDir()
    fs.writeFileSync(path.join(dir, "pynchy.yaml"), `dataDir: ${dir}\n`)
    const release = (text: string) => fs.writeFileSync(path.join(dir, `release-${text.replace(/[^A-Za-z0-9]/g, "_")}`), "")
    const name = `chat-stream-${process.pid}`
    chatIn(name, dir, { PYNCHY_TEST_STREAM_HOLD: dir })
    try {
      await until(name, /^you›\s*$/m)
      tmux("send-keys", "-t", name, "hello there", "Enter")
      // The turn is held after its deltas: this text came only from the stream.
      const streamed = await until(name, /pynchy› echo: hello there\s*$/)
      assert.notMatch(streamed, /pynchy› echo: hello there\s*\nyou›/)
      release("hello there")
      const confirmed = await until(name, /pynchy› echo: hello there\nyou›/)
      assert.strictEqual(confirmed.match(/echo: hello there/g)?.length, 1)

      // A final reply that differs from the stream replaces the streamed text.
      tmux("send-keys", "-t", name, "revise me", "Enter")
      await until(name, /pynchy› echo: revise me\s*$/)
      release("revise me")
      const replaced = await until(name, /pynchy› echo: revise me \(revised\)\nyou›/)
      assert.strictEqual(replaced.match(/echo: revise me/g)?.length, 1)
      assert.strictEqual(replaced.match(/echo: hello there/g)?.length, 1)
      tmux("send-keys", "-t", name, "C-c")
      assert.match(await until(name, /EXITED \d+/), /EXITED 0/)
    } finally {
      tmux("kill-session", "-t", name)
    }
  })
})

/** A model's reply that tries to take over the terminal: titles, colours, clearing, cursor moves, C1, a reset. */
const HOSTILE = [
  "HOSTILE-START ",
  "\x1b]2;PWNED-TITLE\x07", // OSC 2: the window (pane) title
  "\x1b]0;PWNED-ICON\x1b\\", // OSC 0, ended by ST
  "\x1bkPWNED-WINDOW\x1b\\", // tmux's window name
  "\x1b[41;97mRED\x1b[0m", // colours
  "\x1b[2J\x1b[H\x1b[3J", // clear the screen and the scrollback, cursor home
  "\x1b[1A\x1b[2K\r", // up a line, erase it, back to its start
  "\x9b31mC1 ", // CSI as one C1 character
  "\x1bc", // full reset
  "\x07\x08\x7f\u202e", // bell, backspace, DEL, right-to-left override
  "\tHOSTILE-END"
].join("")

describe.skipIf(skip)("pynchy chat shows a hostile reply as text", () => {
  it("escape sequences in streamed and final replies leave the screen, its colours and the title alone", { timeout: PROCESS_TEST_TIMEOUT }, async () => {
    const dir = tempDir()
    fs.writeFileSync(path.join(dir, "pynchy.yaml"), `dataDir: ${dir}\n`)
    const replyFile = path.join(dir, "reply.txt")
    fs.writeFileSync(replyFile, HOSTILE)
    const name = `chat-hostile-${process.pid}`
    chatIn(name, dir, { PYNCHY_TEST_REPLY_FILE: replyFile })
    const show = (format: string) => tmux("display", "-p", "-t", name, format).trim()
    try {
      await until(name, /^you›\s*$/m)
      const title = show("#{pane_title}")
      const window = show("#{window_name}")
      // Streamed, then replaced by a final reply that differs (`revise ...`), then streamed and confirmed.
      tmux("send-keys", "-t", name, "revise me", "Enter")
      await until(name, /HOSTILE-END \(revised\)/)
      tmux("send-keys", "-t", name, "again", "Enter")
      await until(name, /you› again\n/)
      const screen = await until(name, /HOSTILE-END\nyou›\s*$/)
      assert.strictEqual(show("#{pane_title}"), title)
      assert.strictEqual(show("#{window_name}"), window)
      assert.notMatch(`${show("#{pane_title}")} ${show("#{window_name}")}`, /PWNED/)
      // Nothing cleared or overwrote the screen: the banner and both exchanges are there, each reply once.
      assert.include(screen, "pynchy chat — Ctrl-C or /exit to leave")
      assert.include(screen, "you› revise me")
      assert.strictEqual(screen.match(/HOSTILE-START/g)?.length, 2, screen)
      assert.strictEqual(screen.match(/HOSTILE-END \(revised\)/g)?.length, 1, screen)
      // The sequences are shown as text.
      assert.include(screen, "\\u001b]2;PWNED-TITLE\\u0007")
      assert.include(screen, "\\u009b31mC1")
      // No colour but the chat's own (its dim status): none of the reply's red or white.
      const coloured = tmux("capture-pane", "-p", "-e", "-t", name)
      assert.notMatch(coloured, /\x1b\[[0-9;]*\b(41|97)\b[0-9;]*m/)
      tmux("send-keys", "-t", name, "C-c")
      assert.match(await until(name, /EXITED \d+/), /EXITED 0/)
    } finally {
      tmux("kill-session", "-t", name)
    }
  })
})

describe("pynchy chat without a terminal", () => {
  afterAll(killAllHosts)

  /** `pynchy chat` to its end, without blocking this worker (a long synchronous wait starves vitest's own messages). */
  const run = (dir: string, args: Array<string>, input: string, env: Record<string, string> = {}) =>
    new Promise<{ readonly status: number | null; readonly stdout: string; readonly stderr: string }>((resolve) => {
      const child = spawn(process.execPath, ["--import", "tsx", ENTRY, "chat", ...args], {
        cwd: REPO,
        env: { ...cleanEnv(), PYNCHY_CONFIG: path.join(dir, "pynchy.yaml"), ...env }
      })
      let stdout = ""
      let stderr = ""
      child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d))
      child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d))
      const timer = setTimeout(() => child.kill("SIGKILL"), PROCESS_TEST_TIMEOUT - 10_000)
      child.on("close", (status) => {
        clearTimeout(timer)
        resolve({ status, stdout, stderr })
      })
      child.stdin.end(input)
    })

  it("reads lines from stdin, prints the replies, and ends after the last answer", { timeout: PROCESS_TEST_TIMEOUT }, async () => {
    const dir = tempDir()
    fs.writeFileSync(path.join(dir, "pynchy.yaml"), `dataDir: ${dir}\n`)
    const r = await run(dir, [], "one\ntwo\n")
    assert.strictEqual(r.status, 0, r.stderr)
    assert.include(r.stdout, "pynchy› echo: one")
    assert.include(r.stdout, "pynchy› echo: two")
  })

  it("--connect talks to a running host (the real bin) through its HTTP API", { timeout: PROCESS_TEST_TIMEOUT }, async () => {
    const dir = tempDir()
    const port = await freePort()
    fs.writeFileSync(path.join(dir, "pynchy.yaml"), [
      `dataDir: ${dir}`,
      "workspaces: [{ id: main, agentCore: scripted }]",
      "routes: [{ connection: web, place: '*', workspace: main }]",
      `connections: { web: { kind: http, port: ${port}, tokens: ['${hashToken("s3cret")}'] } }`
    ].join("\n") + "\n")
    const host = await startHost(dir)
    try {
      const r = await run(dir, ["--connect", `http://127.0.0.1:${port}`, "--session", "t1"], "ping\n", { PYNCHY_TOKEN: "s3cret" })
      assert.strictEqual(r.status, 0, r.stderr)
      assert.include(r.stdout, "pynchy› echo: ping")
      const refused = await run(dir, ["--connect", `http://127.0.0.1:${port}`], "ping\n", { PYNCHY_TOKEN: "wrong" })
      assert.include(refused.stdout, "unauthorized")
    } finally {
      await stopHost(host)
    }
  })
})
