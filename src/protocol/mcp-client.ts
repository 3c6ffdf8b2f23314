/**
 * One MCP tool server over stdio, through the official SDK client: start it, list its tools
 * (through the allowlist), call them, close it. Plain Promises, shared by the runner (sandbox
 * servers, inside the turn's sandbox) and the host (host servers, src/mcp/McpHost.ts). Every way a
 * server can fail is an `McpProblem` with a code the model reads; nothing here throws anything else.
 */
import type { Stream } from "node:stream"
import { redactText } from "./redact-text.js"

/** A server as it is started: the values of its env are already resolved. */
export interface McpLaunch {
  readonly name: string
  readonly command: string
  readonly args: ReadonlyArray<string>
  readonly env: Readonly<Record<string, string>>
  readonly tools?: ReadonlyArray<string> | undefined
  readonly timeoutSeconds: number
}

export interface McpTool {
  /** The server's own name for it. */
  readonly name: string
  /** The name the model is offered: `<server>__<tool>`. */
  readonly offered: string
  readonly description: string
  readonly inputSchema: Readonly<Record<string, unknown>>
}

export interface McpAnswer {
  /** false when the server answered with `isError`. */
  readonly ok: boolean
  readonly text: string
}

export interface McpConnection {
  readonly tools: ReadonlyArray<McpTool>
  /** Whether the server is gone (it exited or its pipe closed). */
  readonly closed: () => boolean
  readonly call: (tool: string, input: unknown, signal?: AbortSignal) => Promise<McpAnswer>
  readonly close: () => Promise<void>
}

/**
 * `mcp_start_failed`, `mcp_start_timeout`, `mcp_call_timeout`, `mcp_server_exited`, `mcp_call_failed`,
 * `mcp_unknown_tool`. A server that is gone carries what it last wrote to stderr (`stderrTail`).
 */
export class McpProblem extends Error {
  constructor(readonly code: string, reason: string, readonly stderrTail?: string) {
    super(reason)
  }
}

/** How much of a server's stderr is kept: its last bytes, where a dying program says why. */
export const STDERR_TAIL_BYTES = 2048

// C0 and C1 controls but newline and tab: the tail goes to logs and to the model, never as escapes.
const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g

/**
 * Keeps the last STDERR_TAIL_BYTES a server writes to stderr; `read` gives them redacted (key-like
 * strings and the server's own env values masked) and printable, once the stream has ended or
 * after `waitMs` (a server that died may still have bytes in the pipe when its stdout closes).
 */
const stderrTail = (stream: Stream | null, known: ReadonlyArray<string>) => {
  let tail = Buffer.alloc(0)
  const ended = new Promise<void>((resolve) => {
    if (stream === null) return resolve()
    stream.on("data", (chunk: Buffer | string) => {
      tail = Buffer.concat([tail, typeof chunk === "string" ? Buffer.from(chunk) : chunk])
      if (tail.length > STDERR_TAIL_BYTES * 2) tail = tail.subarray(tail.length - STDERR_TAIL_BYTES)
    })
    for (const event of ["end", "close", "error"]) stream.once(event, () => resolve())
  })
  return async (waitMs: number): Promise<string> => {
    await Promise.race([ended, new Promise((resolve) => setTimeout(resolve, waitMs).unref())])
    const text = redactText(tail.subarray(Math.max(0, tail.length - STDERR_TAIL_BYTES)).toString("utf8"), known).replace(CONTROLS, "?")
    // Masking can lengthen it; cut from the front so the end (the reason) stays.
    let out = text
    while (Buffer.byteLength(out) > STDERR_TAIL_BYTES) out = out.slice(Math.max(1, out.length - STDERR_TAIL_BYTES))
    return out
  }
}

/** Function names the LLM APIs accept. */
const OFFERABLE = /^[A-Za-z0-9_-]{1,64}$/

export const offeredName = (server: string, tool: string) => `${server}__${tool}`

/** The text of a tool result: its text parts; other parts are named, not inlined. */
const resultText = (content: unknown): string => {
  if (!Array.isArray(content)) return ""
  return content.map((part: { type?: unknown; text?: unknown }) => (part?.type === "text" && typeof part.text === "string" ? part.text : `[${String(part?.type ?? "part")} content]`)).join("\n")
}

// JSON-RPC codes of the SDK's McpError: a request past its deadline, a connection that closed.
const REQUEST_TIMEOUT = -32001
const CONNECTION_CLOSED = -32000

const problemOf = (e: unknown, phase: "start" | "call", name: string, closed: boolean): McpProblem => {
  const code = (e as { code?: unknown })?.code
  if (code === REQUEST_TIMEOUT) return new McpProblem(`mcp_${phase}_timeout`, `MCP server '${name}' did not answer in time`)
  if (code === CONNECTION_CLOSED || closed) return new McpProblem("mcp_server_exited", `MCP server '${name}' exited`)
  if ((e as { code?: unknown })?.code === "ENOENT") return new McpProblem("mcp_start_failed", `MCP server '${name}': command not found`)
  return phase === "start"
    ? new McpProblem("mcp_start_failed", `MCP server '${name}' could not be started`)
    : new McpProblem("mcp_call_failed", `MCP server '${name}' refused the call`)
}

/**
 * Starts the server with exactly `launch.env` (plus PATH and HOME, nothing else) in `cwd`, and lists its tools.
 * An abort (a caller's deadline) closes it, so nothing is left running.
 */
export const connectMcp = async (launch: McpLaunch, cwd: string, nodePath: string, signal?: AbortSignal): Promise<McpConnection> => {
  const [{ Client }, { StdioClientTransport, getDefaultEnvironment }] = await Promise.all([import("@modelcontextprotocol/sdk/client/index.js"), import("@modelcontextprotocol/sdk/client/stdio.js")])
  const timeout = launch.timeoutSeconds * 1000
  const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? cwd, ...launch.env }
  // The SDK starts the server with its defaults (HOME, LOGNAME, PATH, SHELL, TERM, USER) under the
  // env it is given; node's spawn leaves out a name whose value is undefined, so each default the
  // launch does not set is unset that way, and the server gets exactly `env`.
  const unset = Object.fromEntries(Object.keys(getDefaultEnvironment()).filter((k) => !(k in env)).map((k) => [k, undefined]))
  const transport = new StdioClientTransport({
    command: launch.command === "node" ? nodePath : launch.command,
    args: [...launch.args],
    env: { ...unset, ...env } as Record<string, string>,
    cwd,
    stderr: "pipe"
  })
  const stderr = stderrTail(transport.stderr, Object.values(launch.env))
  // A problem that means the server is gone carries its stderr's tail.
  const withTail = async (p: McpProblem): Promise<McpProblem> => {
    if (p.code !== "mcp_server_exited" && p.code !== "mcp_start_failed") return p
    const tail = await stderr(1_000)
    return tail.trim() === "" ? p : new McpProblem(p.code, p.message, tail)
  }
  let closed = false
  const client = new Client({ name: "pynchy", version: "1" })
  client.onclose = () => {
    closed = true
  }
  const close = () => client.close().catch(() => undefined)
  signal?.addEventListener("abort", () => void close(), { once: true })
  let listed: ReadonlyArray<{ name: string; description?: string | undefined; inputSchema: Record<string, unknown> }>
  try {
    const options = { timeout, ...(signal !== undefined ? { signal } : {}) }
    await client.connect(transport, options)
    listed = (await client.listTools(undefined, options)).tools
  } catch (e) {
    const problem = problemOf(e, "start", launch.name, closed)
    await close()
    throw await withTail(problem)
  }
  const allow = launch.tools === undefined ? undefined : new Set(launch.tools)
  const tools = listed
    .filter((t) => (allow === undefined || allow.has(t.name)) && OFFERABLE.test(offeredName(launch.name, t.name)))
    .map((t) => ({ name: t.name, offered: offeredName(launch.name, t.name), description: t.description ?? "", inputSchema: { ...t.inputSchema } }))
  const known = new Set(tools.map((t) => t.name))
  return {
    tools,
    closed: () => closed,
    call: async (tool, input, signal) => {
      if (!known.has(tool)) throw new McpProblem("mcp_unknown_tool", `MCP server '${launch.name}' offers no tool '${tool}'`)
      if (closed) throw await withTail(new McpProblem("mcp_server_exited", `MCP server '${launch.name}' exited`))
      const args = input !== null && typeof input === "object" && !Array.isArray(input) ? (input as Record<string, unknown>) : {}
      try {
        const result = await client.callTool({ name: tool, arguments: args }, undefined, { timeout, ...(signal !== undefined ? { signal } : {}) })
        return { ok: result.isError !== true, text: resultText(result.content) }
      } catch (e) {
        throw await withTail(problemOf(e, "call", launch.name, closed))
      }
    },
    close
  }
}
