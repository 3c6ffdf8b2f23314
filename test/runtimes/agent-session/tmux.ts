import { execFileSync, spawnSync } from "node:child_process"
import * as crypto from "node:crypto"
import * as path from "node:path"

export const EXAMPLE = path.resolve(import.meta.dirname, "../../../examples/local-tmux-runtime/register.mjs")

/**
 * A private tmux server (`-L <socket>`) with four sessions: `work` (a bare bash), `busy`
 * (sleep in the foreground), `done` (its process exited with status 3; the pane remains) and
 * `ok` (exited with status 0).
 */
export const startTmux = () => {
  const socket = `pynchy-test-${process.pid}-${crypto.randomBytes(3).toString("hex")}`
  const tmux = (...args: Array<string>) => execFileSync("tmux", ["-L", socket, ...args], { encoding: "utf8" })
  tmux("-f", "/dev/null", "new-session", "-d", "-s", "work", "-x", "120", "-y", "30", "env PS1='$ ' bash --norc --noprofile")
  tmux("set-option", "-g", "remain-on-exit", "on")
  tmux("new-session", "-d", "-s", "busy", "sleep 600")
  // Each process lives a moment: one that exits before tmux notes its pid loses its status in tmux itself.
  tmux("new-session", "-d", "-s", "done", "sleep 0.2; exit 3")
  tmux("new-session", "-d", "-s", "ok", "echo all good; sleep 0.2; exit 0")
  // Wait (bounded) until each pane is in the state the tests rely on: bash showing its prompt,
  // sleep in the foreground (not the `sh -c` before it), the `done` pane's process exited.
  const ready = () =>
    tmux("display-message", "-p", "-t", "work", "#{pane_current_command}").trim() === "bash" &&
    tmux("capture-pane", "-p", "-t", "work").includes("$") &&
    tmux("display-message", "-p", "-t", "busy", "#{pane_current_command}").trim() === "sleep" &&
    tmux("display-message", "-p", "-t", "done", "#{pane_dead}").trim() === "1" &&
    tmux("display-message", "-p", "-t", "ok", "#{pane_dead}").trim() === "1"
  for (let i = 0; i < 400 && !ready(); i++) spawnSync("sleep", ["0.05"])
  if (!ready()) throw new Error("the tmux test sessions did not reach their starting state within 20 s")
  return {
    socket,
    hasSession: (name: string) => spawnSync("tmux", ["-L", socket, "has-session", "-t", name]).status === 0,
    run: (...args: Array<string>) => tmux(...args),
    stop: () => spawnSync("tmux", ["-L", socket, "kill-server"])
  }
}
