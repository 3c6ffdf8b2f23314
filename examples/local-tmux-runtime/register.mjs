// An agent-session runtime for sessions that live in local tmux panes.
//
// Plain JavaScript, no build step, no import from pynchy: load it with
//   PYNCHY_AGENT_SESSION_RUNTIME_MODULES=/path/to/examples/local-tmux-runtime/register.mjs
// The session ref is a tmux target (a session name, or `session:window.pane`).
//
// Environment (read at every call):
//   LOCAL_TMUX_SOCKET        tmux socket name (`tmux -L <name>`); unset = the default server
//   LOCAL_TMUX_BIN           the tmux binary (default `tmux`)
//   LOCAL_TMUX_REPLY_WAIT_MS how long `continue` waits for the pane to settle (default 15000,
//                            never past the call's deadline)
import { execFile } from "node:child_process"

const SHELLS = new Set(["bash", "sh", "zsh", "fish", "dash", "ksh", "mksh", "tcsh", "csh", "ash"])
const POLL_MS = 100
const SETTLED_POLLS = 3
const HISTORY_LINES = 50

function tmux(args, signal) {
  const socket = process.env.LOCAL_TMUX_SOCKET
  const argv = socket ? ["-L", socket, ...args] : args
  return new Promise((resolve, reject) => {
    execFile(process.env.LOCAL_TMUX_BIN || "tmux", argv, { signal, encoding: "utf8", maxBuffer: 4 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error && (error.name === "AbortError" || error.code === "ENOENT")) return reject(error)
      resolve({ ok: !error, stdout, stderr: String(stderr).trim() })
    })
  })
}

const trimEnd = (text) => text.replace(/\s+$/, "")

const sleep = (ms, signal) =>
  new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason)
    const timer = setTimeout(resolve, ms)
    signal.addEventListener("abort", () => (clearTimeout(timer), reject(signal.reason)), { once: true })
  })

/** Pane facts in one round trip; null when the target does not exist. */
async function pane(target, signal) {
  const r = await tmux(["display-message", "-p", "-t", target, "#{pane_dead}\t#{pane_dead_status}\t#{pane_current_command}\t#{history_size}\t#{cursor_y}"], signal)
  if (!r.ok) return null
  const [dead, deadStatus, command, historySize, cursorY] = r.stdout.replace(/\n$/, "").split("\t")
  return { dead: dead === "1", deadStatus, command, historySize: Number(historySize), cursorY: Number(cursorY) }
}

async function capture(target, start, signal) {
  const r = await tmux(["capture-pane", "-p", "-J", "-t", target, "-S", String(start)], signal)
  return r.ok ? trimEnd(r.stdout) : ""
}

function statusOf(facts, output) {
  if (facts.dead) return { state: "finished", detail: `the pane's process exited (status ${facts.deadStatus || "?"})`, output }
  return SHELLS.has(facts.command)
    ? { state: "idle", detail: `a shell (${facts.command}) is in the foreground`, output }
    : { state: "running", detail: `${facts.command} is in the foreground`, output }
}

async function inspect(ref, { signal }) {
  const exists = await tmux(["has-session", "-t", ref.sessionRef], signal)
  if (!exists.ok) return { state: "unknown", code: "session_not_found", detail: `no tmux session '${ref.sessionRef}'` }
  const facts = await pane(ref.sessionRef, signal)
  if (facts === null) return { state: "unknown", code: "pane_not_found", detail: `no tmux pane '${ref.sessionRef}'` }
  return statusOf(facts, await capture(ref.sessionRef, -HISTORY_LINES, signal))
}

/**
 * Types the request into the pane (literally) and presses Enter, then waits until the pane is
 * quiet (unchanged for a few polls with a shell in the foreground, or until the wait runs out)
 * and answers the pane text written since the request: the echoed command and what followed.
 */
async function continueSession(ref, request, { signal, timeoutMs }) {
  const before = await inspect(ref, { signal })
  if (before.state === "unknown" || before.state === "finished") return { ...before, code: before.code ?? "session_finished" }
  const start = await pane(ref.sessionRef, signal)
  const line = start.historySize + start.cursorY
  const typed = await tmux(["send-keys", "-t", ref.sessionRef, "-l", "--", request.text], signal)
  const entered = typed.ok && (await tmux(["send-keys", "-t", ref.sessionRef, "Enter"], signal)).ok
  if (!entered) return { state: "unavailable", code: "send_keys_failed", detail: typed.stderr || "tmux send-keys failed" }

  const wait = Math.max(0, Math.min(Number(process.env.LOCAL_TMUX_REPLY_WAIT_MS) || 15_000, timeoutMs - 500))
  const until = Date.now() + wait
  let last = null
  let same = 0
  let facts = start
  while (Date.now() < until) {
    await sleep(POLL_MS, signal)
    facts = await pane(ref.sessionRef, signal)
    if (facts === null) return { state: "unknown", code: "session_not_found", detail: `tmux session '${ref.sessionRef}' went away` }
    const text = await capture(ref.sessionRef, line - facts.historySize, signal)
    same = text === last ? same + 1 : 0
    last = text
    if (facts.dead || (same >= SETTLED_POLLS && SHELLS.has(facts.command))) break
  }
  return statusOf(facts, last ?? "")
}

/**
 * Detach leaves the tmux session exactly as it is (it keeps running; nothing is typed into it):
 * what detaching removes is pynchy's attachment record. It answers the session's state, code `detached`.
 */
async function detach(ref, { signal }) {
  const now = await inspect(ref, { signal })
  return { state: now.state, code: "detached", detail: "the tmux session was left running as it is" }
}

export function registerAgentSessionRuntimes(registry) {
  registry.register({ id: "local-tmux", provider: "tmux", inspect, continue: continueSession, detach })
}
