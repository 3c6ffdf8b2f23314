// An agent-session runtime for sessions that live in local tmux panes, written to ClawConnect's
// runtime contract: it reads `ref.sessionId` and answers loose observations in the closed
// vocabulary (`idle`, `running`, `completed`, `dead` ...), or null for a session that is not there.
//
// Plain JavaScript, no build step, no import from pynchy: load it with
//   PYNCHY_AGENT_SESSION_RUNTIME_MODULES=/path/to/examples/local-tmux-runtime/register.mjs
// (or CLAWCONNECT_AGENT_SESSION_RUNTIME_MODULES). The session id is a tmux target: a session
// name, or `session:window.pane`.
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
// tmux marks a pane dead when its terminal closes, and records the exit status a moment later,
// when it reaps the process: a read in between sees `pane_dead` without a status. (A process that
// exits before tmux has noted its pid never gets one: that pane answers `dead`, status unknown.)
const EXIT_STATUS_READS = 40
const EXIT_STATUS_WAIT_MS = 50

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
    const onAbort = () => (clearTimeout(timer), reject(signal.reason))
    const timer = setTimeout(() => (signal.removeEventListener("abort", onAbort), resolve()), ms)
    signal.addEventListener("abort", onAbort, { once: true })
  })

const FORMAT = "#{pane_dead}\t#{pane_dead_status}\t#{pane_dead_signal}\t#{pane_current_command}\t#{history_size}\t#{cursor_y}"

/** Pane facts in one round trip; null when the target does not exist. */
async function pane(target, signal) {
  const r = await tmux(["display-message", "-p", "-t", target, FORMAT], signal)
  if (!r.ok) return null
  const [dead, exitStatus, exitSignal, command, historySize, cursorY] = r.stdout.replace(/\n$/, "").split("\t")
  return { dead: dead === "1", exitStatus, exitSignal, command, historySize: Number(historySize), cursorY: Number(cursorY) }
}

/** A dead pane's facts once tmux has recorded how its process ended (bounded: ~2 s). */
async function settledPane(target, signal) {
  let facts = await pane(target, signal)
  for (let i = 0; facts !== null && facts.dead && facts.exitStatus === "" && facts.exitSignal === "" && i < EXIT_STATUS_READS; i++) {
    await sleep(EXIT_STATUS_WAIT_MS, signal)
    facts = await pane(target, signal)
  }
  return facts
}

async function capture(target, start, signal) {
  const r = await tmux(["capture-pane", "-p", "-J", "-t", target, "-S", String(start)], signal)
  return r.ok ? trimEnd(r.stdout) : ""
}

/** The observation for a pane: its text is `latestResponse` (and the final answer when the turn is done). */
function observationOf(facts, text) {
  const latestResponse = text === "" ? undefined : text
  if (facts.dead) {
    if (facts.exitStatus === "0") return { state: "completed", alive: false, latestResponse, termination: { reason: "completed", exitCode: 0 } }
    if (facts.exitStatus !== "") {
      const exitCode = Number(facts.exitStatus)
      return { state: "dead", alive: false, latestResponse, detail: `the pane's process exited with status ${exitCode}`, termination: { reason: "died", exitCode } }
    }
    if (facts.exitSignal !== "") {
      return { state: "dead", alive: false, latestResponse, detail: `the pane's process was killed by signal ${facts.exitSignal}`, termination: { reason: "died", message: `signal ${facts.exitSignal}` } }
    }
    return { state: "dead", alive: false, latestResponse, detail: "the pane's process ended; tmux reported no exit status", termination: { reason: "unknown" } }
  }
  return SHELLS.has(facts.command)
    ? { state: "idle", alive: true, latestResponse, detail: `a shell (${facts.command}) is in the foreground` }
    : { state: "running", alive: true, latestResponse, detail: `${facts.command} is in the foreground` }
}

async function inspect(ref, { signal }) {
  const target = ref.sessionId
  if (!(await tmux(["has-session", "-t", target], signal)).ok) return null
  const facts = await settledPane(target, signal)
  if (facts === null) return null
  return observationOf(facts, await capture(target, -HISTORY_LINES, signal))
}

/**
 * Types the prompt into the pane (literally) and presses Enter, then waits until the pane is
 * quiet (unchanged for a few polls with a shell in the foreground, or until the wait runs out)
 * and answers the pane text written since the prompt: the echoed command and what followed.
 */
async function continueSession(ref, request, { signal, timeoutMs }) {
  const target = ref.sessionId
  const before = await inspect(ref, { signal })
  if (before === null || before.state === "completed" || before.state === "dead") return before
  if (typeof request.prompt !== "string" || request.prompt === "") return before
  const start = await pane(target, signal)
  if (start === null) return null
  const line = start.historySize + start.cursorY
  const typed = await tmux(["send-keys", "-t", target, "-l", "--", request.prompt], signal)
  const entered = typed.ok && (await tmux(["send-keys", "-t", target, "Enter"], signal)).ok
  if (!entered) return { state: "unknown", error: { code: "send_keys_failed", message: typed.stderr || "tmux send-keys failed" } }

  const budget = typeof timeoutMs === "number" ? timeoutMs - 500 : Number.POSITIVE_INFINITY
  const wait = Math.max(0, Math.min(Number(process.env.LOCAL_TMUX_REPLY_WAIT_MS) || 15_000, budget))
  const until = Date.now() + wait
  let last = null
  let same = 0
  let facts = start
  while (Date.now() < until) {
    await sleep(POLL_MS, signal)
    facts = await pane(target, signal)
    if (facts === null) return null
    const text = await capture(target, line - facts.historySize, signal)
    same = text === last ? same + 1 : 0
    last = text
    if (facts.dead || (same >= SETTLED_POLLS && SHELLS.has(facts.command))) break
  }
  if (facts.dead) facts = (await settledPane(target, signal)) ?? facts
  return observationOf(facts, last ?? "")
}

/**
 * Asked only when an operator detaches with "stop the session": kills the tmux session and
 * answers what it was before it went, as `dead` with the reason given.
 */
async function detach(ref, request, { signal }) {
  const before = await inspect(ref, { signal })
  if (before === null) return null
  const killed = await tmux(["kill-session", "-t", ref.sessionId], signal)
  if (!killed.ok) return { ...before, error: { code: "kill_session_failed", message: killed.stderr || "tmux kill-session failed" } }
  const reason = request.reason || "detached"
  return { state: "dead", alive: false, latestResponse: before.latestResponse, detail: `the tmux session was killed (${reason})`, termination: { reason: "cancelled", message: reason } }
}

export function registerAgentSessionRuntimes(registry) {
  registry.register({ id: "local-tmux", provider: "tmux", inspect, continue: continueSession, detach })
}
