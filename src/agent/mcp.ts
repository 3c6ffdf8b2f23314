/**
 * The turn's sandbox MCP servers, run by the runner: each started once per turn inside the
 * sandbox (in /workspace, over stdio), their tools offered as `<server>__<tool>`. A server that
 * does not start is named to the model in the system prompt; one that crashes or hangs on a call
 * is that call's tool error. Nothing here fails the turn. A server that died says why: the tail of
 * its stderr (redacted, src/agent/mcp-client.ts) is in the call's tool error and, with a start
 * failure's, in the runner's stderr, which is the host-only runner.log.
 */
import type { McpLaunchSpec, UnavailableServer } from "../protocol/ipc.js"
import type { OfferedTool, ToolOutcome } from "./cores/types.js"
import { connectMcp, type McpConnection, McpProblem } from "../protocol/mcp-client.js"

export interface TurnMcp {
  readonly tools: ReadonlyArray<OfferedTool>
  /** Runs an offered MCP tool; undefined when the name is not one. */
  readonly call: (offered: string, input: unknown) => Promise<ToolOutcome> | undefined
  /** Servers that offer nothing this turn (sandbox and host), for the system prompt. */
  readonly unavailable: ReadonlyArray<UnavailableServer>
  readonly close: () => Promise<void>
}

/** One JSON line in runner.log (host-only) with what a dead server last wrote. */
const logTail = (server: string, p: McpProblem) => {
  if (p.stderrTail !== undefined) process.stderr.write(`${JSON.stringify({ kind: "mcp_server_stderr", server, code: p.code, stderr: p.stderrTail })}\n`)
}

export const startTurnMcp = async (launches: ReadonlyArray<McpLaunchSpec>, hostUnavailable: ReadonlyArray<UnavailableServer>, cwd: string): Promise<TurnMcp> => {
  const started = await Promise.allSettled(launches.map((l) => connectMcp(l, cwd, process.execPath)))
  const connections: Array<McpConnection> = []
  const unavailable: Array<UnavailableServer> = [...hostUnavailable]
  const byOffered = new Map<string, { readonly connection: McpConnection; readonly tool: string }>()
  const tools: Array<OfferedTool> = []
  started.forEach((s, i) => {
    const server = launches[i]!.name
    if (s.status === "rejected") {
      const p = s.reason instanceof McpProblem ? s.reason : new McpProblem("mcp_start_failed", `MCP server '${server}' could not be started`)
      logTail(server, p)
      unavailable.push({ server, code: p.code, reason: p.message })
      return
    }
    connections.push(s.value)
    for (const t of s.value.tools) {
      byOffered.set(t.offered, { connection: s.value, tool: t.name })
      tools.push({ name: t.offered, description: t.description, inputSchema: t.inputSchema })
    }
  })
  return {
    tools,
    unavailable,
    call: (offered, input) => {
      const target = byOffered.get(offered)
      if (target === undefined) return undefined
      return target.connection.call(target.tool, input).then(
        (answer): ToolOutcome => ({ ok: answer.ok, output: answer.text }),
        (e): ToolOutcome => {
          const p = e instanceof McpProblem ? e : new McpProblem("mcp_call_failed", "the MCP call failed")
          logTail(offered.slice(0, offered.indexOf("__")), p)
          return { ok: false, output: { code: p.code, message: p.message, ...(p.stderrTail !== undefined ? { stderr: p.stderrTail } : {}) } }
        }
      )
    },
    close: async () => {
      await Promise.all(connections.map((c) => c.close()))
    }
  }
}

/** The system prompt's note on servers that offer nothing this turn. */
export const unavailableSection = (unavailable: ReadonlyArray<UnavailableServer>): string =>
  unavailable.length === 0
    ? ""
    : `# Tool servers unavailable this turn\nTheir tools are not offered; tell the user if they needed them.\n${unavailable.map((u) => `- ${u.server} (${u.code}): ${u.reason}`).join("\n")}`
