/**
 * `bash`: `bash -c <command>` in the workspace, in its own process group, killed with the whole
 * group at the deadline (and when bash exits, so nothing it left behind keeps running). Its
 * environment is the runner's without the turn token.
 */
import { spawn } from "node:child_process"
import { check } from "./input.js"
import { capped, ok, refuse, type ToolAnswer } from "./output.js"
import { workspaceDir } from "./paths.js"
import { objectSchema, type SandboxTool } from "./tool.js"

export const DEFAULT_TIMEOUT_SECONDS = 60
const MAX_TIMEOUT_SECONDS = 3_600
/** Bytes kept from each stream while the command runs: enough to fill the cap, never the whole output. */
const KEEP_BYTES = 256 * 1024
/** Variables a command never sees. */
const HIDDEN = new Set(["PYNCHY_TURN_TOKEN"])

export const toolEnv = (env: NodeJS.ProcessEnv): NodeJS.ProcessEnv =>
  Object.fromEntries(Object.entries(env).filter(([k]) => !HIDDEN.has(k)))

const killGroup = (pid: number | undefined) => {
  // A group id of 1 or less would be every process we may signal: never.
  if (pid === undefined || pid <= 1) return
  try {
    process.kill(-pid, "SIGKILL")
  } catch {
    // already gone
  }
}

export const runCommand = (command: string, timeoutSeconds: number): Promise<ToolAnswer> =>
  new Promise((resolve) => {
    const out = { stdout: [] as Array<Buffer>, stderr: [] as Array<Buffer>, bytes: { stdout: 0, stderr: 0 }, total: { stdout: 0, stderr: 0 } }
    let child: ReturnType<typeof spawn>
    try {
      child = spawn("bash", ["-c", command], { cwd: workspaceDir(), env: toolEnv(process.env), detached: true, stdio: ["ignore", "pipe", "pipe"] })
    } catch {
      return resolve(refuse("bash could not be started"))
    }
    const collect = (stream: "stdout" | "stderr") => (chunk: Buffer) => {
      out.total[stream] += chunk.length
      if (out.bytes[stream] < KEEP_BYTES) {
        out[stream].push(chunk)
        out.bytes[stream] += chunk.length
      }
    }
    child.stdout?.on("data", collect("stdout"))
    child.stderr?.on("data", collect("stderr"))
    let timedOut = false
    let settled = false
    const timer = setTimeout(() => {
      timedOut = true
      killGroup(child.pid)
    }, timeoutSeconds * 1000)
    const finish = (code: number | null, signal: NodeJS.Signals | null) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      const text = (s: "stdout" | "stderr") => {
        const t = Buffer.concat(out[s]).toString("utf8")
        return out.total[s] > out.bytes[s] ? `${t}\n[${out.total[s] - out.bytes[s]} more bytes of ${s} not kept]` : t
      }
      const parts: Array<string> = []
      const stdout = text("stdout")
      const stderr = text("stderr")
      if (stdout !== "") parts.push(stdout.replace(/\n$/, ""))
      if (stderr !== "") parts.push(`[stderr]\n${stderr.replace(/\n$/, "")}`)
      const status = timedOut
        ? `[killed after the ${timeoutSeconds} s timeout, with every process it started]`
        : signal !== null
        ? `[ended by ${signal}]`
        : `[exit code ${code ?? "?"}]`
      parts.push(status)
      const body = capped(parts.join("\n"), "narrow the command (head, tail, grep) to see the rest")
      resolve(timedOut || signal !== null ? refuse(body) : ok(body))
    }
    child.on("error", () => {
      clearTimeout(timer)
      if (!settled) {
        settled = true
        resolve(refuse("bash could not be started"))
      }
    })
    child.on("exit", (code, signal) => {
      // What bash left running in its group ends with it; a process that left the group cannot
      // hold the answer: the streams get a moment to drain, then the answer goes.
      killGroup(child.pid)
      const grace = setTimeout(() => {
        child.stdout?.destroy()
        child.stderr?.destroy()
        finish(code, signal)
      }, 200)
      child.once("close", () => {
        clearTimeout(grace)
        finish(code, signal)
      })
    })
  })

export const bash: SandboxTool = {
  name: "bash",
  description:
    `Runs a bash command in the workspace folder (bash -c) and returns its output and exit code. Default timeout ${DEFAULT_TIMEOUT_SECONDS} s; ` +
    "at the deadline the command and everything it started are killed. No network except what the workspace allows.",
  inputSchema: objectSchema({
    command: { type: "string", description: "The command line, run with bash -c." },
    timeoutSeconds: { type: "integer", minimum: 1, maximum: MAX_TIMEOUT_SECONDS, description: `Seconds before it is killed (default ${DEFAULT_TIMEOUT_SECONDS}).` }
  }, ["command"]),
  run: async (input) => {
    const c = check<{ command: string; timeoutSeconds?: number }>(input, {
      command: { type: "string", required: true, nonEmpty: true },
      timeoutSeconds: { type: "integer", min: 1, max: MAX_TIMEOUT_SECONDS }
    })
    if (!c.ok) return refuse(c.error)
    return runCommand(c.value.command, c.value.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS)
  }
}
