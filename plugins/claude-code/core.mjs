// The claude-code agent core. It runs inside the turn's sandbox (imported by the runner, mounted
// read-only with its packages at /opt/pynchy/node_modules) and starts Claude Code's native binary
// as its child, so Claude Code is in the same sandbox: no network, only the gateway socket, with
// the turn token as its bearer key. Its HOME is the conversation's durable folder (ctx.homeDir), so
// the next turn resumes the same Claude session; after `/new` that folder is a fresh one.
// The workspace's host actions are offered as MCP tools of an in-process server whose calls go
// over the turn's IPC socket to the host (ctx.callTool), where policy and approvals judge them.
import { query } from "@anthropic-ai/claude-agent-sdk"
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js"
import * as fs from "node:fs"
import * as path from "node:path"

const DEFAULTS = { permissionMode: "dontAsk", maxTurns: 20, allowedTools: ["Bash", "Read", "Write", "Edit", "Glob", "Grep"] }
const MCP_SERVER = "pynchy"
const SESSION_FILE = "pynchy-claude-session.json"

class ClaudeCodeFailed extends Error {
  constructor(code, message, retryable) {
    super(message)
    this.code = code
    this.retryable = retryable
  }
}

/** The session to resume: the one recorded here, if Claude Code still has its transcript. */
const storedSession = (home) => {
  let id
  try {
    id = JSON.parse(fs.readFileSync(path.join(home, SESSION_FILE), "utf8")).sessionId
  } catch {
    return undefined
  }
  if (typeof id !== "string" || !/^[0-9a-f-]{36}$/.test(id)) return undefined
  const projects = path.join(home, ".claude", "projects")
  let dirs = []
  try {
    dirs = fs.readdirSync(projects)
  } catch {
    return undefined
  }
  return dirs.some((d) => fs.existsSync(path.join(projects, d, `${id}.jsonl`))) ? id : undefined
}

const recordSession = (home, sessionId) => {
  const partial = path.join(home, `.${SESSION_FILE}.partial`)
  fs.writeFileSync(partial, JSON.stringify({ sessionId }), { mode: 0o600 })
  fs.renameSync(partial, path.join(home, SESSION_FILE))
}

/** Host actions as MCP tools: API tool names allow only [A-Za-z0-9_-], action ids have dots. */
const hostActionServer = (ctx) => {
  const byName = new Map()
  for (const t of ctx.turn.tools) {
    let name = t.name.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 48)
    while (byName.has(name)) name = `${name}_`
    byName.set(name, t)
  }
  const server = new Server({ name: MCP_SERVER, version: "1.0.0" }, { capabilities: { tools: {} } })
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: [...byName].map(([name, t]) => ({ name, description: t.description, inputSchema: t.inputSchema }))
  }))
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const t = byName.get(request.params.name)
    if (t === undefined) return { content: [{ type: "text", text: `no host action named ${request.params.name}` }], isError: true }
    const outcome = await ctx.callTool(t.name, request.params.arguments ?? {})
    const text = typeof outcome.output === "string" ? outcome.output : JSON.stringify(outcome.output) ?? "null"
    return { content: [{ type: "text", text }], isError: !outcome.ok }
  })
  return { server, count: byName.size }
}

/** What a fresh session is told of the conversation so far (a resumed one has it already). */
const earlier = (turn) => {
  const lines = []
  if (turn.summary !== null) lines.push(`Summary of the conversation so far:\n${turn.summary}`)
  if (turn.history.length > 0) {
    lines.push("Earlier messages:")
    for (const h of turn.history) lines.push(`${h.role === "user" ? (h.sender ?? "user") : "assistant"}: ${h.text}`)
  }
  return lines.length > 0 ? `${lines.join("\n")}\n\n` : ""
}

export default async function claudeCode(ctx) {
  if (ctx.gateway === null || ctx.turn.model === null) {
    ctx.reply("No LLM provider is configured: set OPENAI_API_KEY or ANTHROPIC_API_KEY, or add `providers:` to pynchy.yaml.")
    return
  }
  const settings = { ...DEFAULTS, ...ctx.turn.claudeCode }
  const home = ctx.homeDir ?? fs.mkdtempSync("/tmp/claude-home-")
  const workspace = process.env.PYNCHY_WORKSPACE_DIR ?? process.cwd()
  const model = ctx.turn.model
  const resume = storedSession(home)
  const asked = ctx.turn.messages.map((m) => m.text).join("\n\n")
  const prompt = resume === undefined ? `${earlier(ctx.turn)}${asked}` : asked
  const actions = hostActionServer(ctx)

  const options = {
    cwd: workspace,
    model,
    maxTurns: settings.maxTurns,
    permissionMode: settings.permissionMode,
    ...(settings.permissionMode === "bypassPermissions" ? { allowDangerouslySkipPermissions: true } : {}),
    allowedTools: [...settings.allowedTools, ...(actions.count > 0 ? [`mcp__${MCP_SERVER}`] : [])],
    ...(actions.count > 0 ? { mcpServers: { [MCP_SERVER]: { type: "sdk", name: MCP_SERVER, instance: actions.server } } } : {}),
    systemPrompt: { type: "preset", preset: "claude_code", append: ctx.system },
    // Nothing from files the agent itself could have written decides its settings.
    settingSources: [],
    includePartialMessages: true,
    ...(resume !== undefined ? { resume } : {}),
    // Claude Code gets only this: the gateway socket and the turn token, every model name mapped
    // to the turn's model (its background calls use the same grant), no traffic but the API's.
    env: {
      PATH: process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin",
      HOME: home,
      TMPDIR: "/tmp",
      ANTHROPIC_UNIX_SOCKET: ctx.gateway.socketPath,
      ANTHROPIC_BASE_URL: "http://localhost",
      ANTHROPIC_AUTH_TOKEN: ctx.gateway.token,
      ANTHROPIC_MODEL: model,
      ANTHROPIC_SMALL_FAST_MODEL: model,
      ANTHROPIC_DEFAULT_HAIKU_MODEL: model,
      ANTHROPIC_DEFAULT_SONNET_MODEL: model,
      ANTHROPIC_DEFAULT_OPUS_MODEL: model,
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      // The host actions are listed to the model as they are, not behind a tool search.
      ENABLE_TOOL_SEARCH: "false",
      DISABLE_AUTOUPDATER: "1",
      DISABLE_TELEMETRY: "1",
      DISABLE_ERROR_REPORTING: "1"
    },
    stderr: () => undefined
  }

  let result
  try {
    for await (const message of query({ prompt, options })) {
      if (message.type === "system" && message.subtype === "init") recordSession(home, message.session_id)
      else if (message.type === "stream_event") {
        const e = message.event
        if (e.type === "content_block_delta" && e.delta?.type === "text_delta" && message.parent_tool_use_id == null) ctx.delta(e.delta.text)
      } else if (message.type === "result") result = message
    }
  } catch {
    // Its message may quote the conversation: the turn's failure says only what happened.
    throw new ClaudeCodeFailed("claude_code_exited", "Claude Code exited before its result", true)
  }
  if (result === undefined) throw new ClaudeCodeFailed("claude_code_no_result", "Claude Code ended without a result", true)
  recordSession(home, result.session_id)
  if (result.subtype === "success" && result.is_error !== true) return ctx.reply(result.result)
  if (result.subtype === "error_max_turns") return ctx.reply(`(Claude Code stopped after ${settings.maxTurns} turns, the most this workspace allows: claudeCode.maxTurns)`)
  throw new ClaudeCodeFailed("claude_code_failed", `Claude Code ended with ${result.subtype}${result.is_error === true ? " (an API error)" : ""}`, true)
}
