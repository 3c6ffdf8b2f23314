/**
 * The in-sandbox agent runner (bundled to dist/runner.mjs). It reads the turn from
 * `$PYNCHY_TURN_FILE` (host-written, read-only to it), runs the selected core, and streams events to the host over
 * `$PYNCHY_IPC_SOCKET`. It knows only the gateway socket and its turn token (the host's first IPC
 * line: never in its environment or command line); under bwrap it runs non-dumpable, so the tools
 * it starts cannot read its memory (untraceable.ts). It runs the sandbox tools itself and writes a
 * transcript (no token) into the session folder. It never prints message content to stderr.
 */
import * as Either from "effect/Either"
import * as fs from "node:fs"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { decodeTurnSpec, type RunnerMessage, type TurnSpec, UNTRACEABLE_ENV } from "../protocol/ipc.js"
import { systemPrompt } from "./context.js"
import { builtinCoreRun } from "./cores/index.js"
import { CoreFailed, type CoreRun, type OfferedTool, type ToolOutcome } from "./cores/types.js"
import { makeGatewayClient } from "./gateway-client.js"
import { connectIpc, type IpcClient } from "./ipc-client.js"
import { startTurnMcp, unavailableSection } from "./mcp.js"
import { sandboxTools } from "./tools/index.js"
import { capped } from "./tools/output.js"
import { runnerTraceable } from "./untraceable.js"

const env = process.env
const sessionDir = env.PYNCHY_SESSION_DIR ?? "/session"
const turnFile = env.PYNCHY_TURN_FILE ?? "/run/turn.json"
const skillsDir = env.PYNCHY_SKILLS_DIR ?? "/skills"
const workspaceDir = env.PYNCHY_WORKSPACE_DIR ?? "/workspace"
const transcriptFile = path.join(sessionDir, "transcript.jsonl")

const transcript = (entry: Record<string, unknown>) => {
  try {
    // Wall-clock time: the runner is a plain Node program in the sandbox, with no Effect runtime.
    fs.appendFileSync(transcriptFile, `${JSON.stringify({ at: Date.now(), ...entry })}\n`)
  } catch {
    // the transcript is a record, not a requirement
  }
}

const readTurn = (): Either.Either<TurnSpec, string> => {
  let raw: unknown
  try {
    raw = JSON.parse(fs.readFileSync(turnFile, "utf8"))
  } catch {
    return Either.left("the turn file is missing or not JSON")
  }
  return Either.mapLeft(decodeTurnSpec(raw), () => "the turn file does not match the turn schema")
}

/**
 * The turn's core: one the bundle carries, or a plugin's module (mounted read-only where
 * `PYNCHY_CORE_MODULE` says) whose default export is the core function. A string is why not.
 */
const loadCore = async (name: string): Promise<CoreRun | { readonly code: string; readonly reason: string }> => {
  const builtin = builtinCoreRun(name)
  if (builtin !== undefined) return builtin
  const file = env.PYNCHY_CORE_MODULE
  if (file === undefined || file === "") return { code: "unknown_agent_core", reason: `no agent core named '${name}' in the runner` }
  let loaded: { readonly default?: unknown }
  try {
    loaded = await import(pathToFileURL(file).href)
  } catch {
    return { code: "agent_core_import_failed", reason: `the module of agent core '${name}' could not be imported` }
  }
  return typeof loaded.default === "function"
    ? (loaded.default as CoreRun)
    : { code: "invalid_agent_core", reason: `the module of agent core '${name}' has no default export function` }
}

/** A plugin core's own failure: an Error with a plain `code` (and `retryable`), as CoreFailed has. */
const isCodedError = (e: unknown): e is Error & { readonly code: string; readonly retryable?: unknown } =>
  e instanceof Error && typeof (e as { code?: unknown }).code === "string" && /^[a-z0-9_]{1,60}$/.test((e as unknown as { code: string }).code)

const fail = (ipc: IpcClient, code: string, message: string, retryable: boolean) => {
  transcript({ kind: "error", code })
  ipc.send({ _tag: "error", code, message, fatal: true, retryable })
}

const main = async () => {
  const ipc = await connectIpc(env.PYNCHY_IPC_SOCKET ?? "/run/ipc.sock", () => process.exit(3), (note) => transcript({ kind: "note", note }))
  const turn = readTurn()
  if (Either.isLeft(turn)) {
    fail(ipc, "invalid_turn", turn.left, false)
    return ipc.close()
  }
  const core = await loadCore(turn.right.core)
  if (typeof core !== "function") {
    fail(ipc, core.code, core.reason, false)
    return ipc.close()
  }
  if (ipc.token !== null && env[UNTRACEABLE_ENV] === "1" && runnerTraceable()) {
    fail(ipc, "runner_traceable", "the runner could be traced by its tools (is fs.suid_dumpable 1?): the turn token is not used", false)
    return ipc.close()
  }
  const gatewaySocket = env.PYNCHY_GATEWAY_SOCKET ?? ""
  const send = (m: RunnerMessage) => ipc.send(m)
  // Sandbox tools first, then the sandbox MCP servers' tools; a later tool with a taken name is not offered (one name, one tool).
  const local = new Map(sandboxTools(turn.right.sandboxTools).map((t) => [t.name as string, t]))
  const mcp = await startTurnMcp(turn.right.mcpServers ?? [], turn.right.unavailableServers ?? [], workspaceDir)
  const tools: Array<OfferedTool> = []
  const seen = new Set<string>()
  for (const t of [...local.values(), ...mcp.tools, ...turn.right.tools]) {
    if (seen.has(t.name)) continue
    seen.add(t.name)
    tools.push({ name: t.name, description: t.description, inputSchema: t.inputSchema })
  }
  const callTool = async (tool: string, input: unknown): Promise<ToolOutcome> => {
    transcript({ kind: "tool_call", tool, input })
    const sandboxTool = local.get(tool)
    const outcome: ToolOutcome = sandboxTool !== undefined
      ? await sandboxTool.run(input).catch(() => ({ ok: false, output: "the tool failed unexpectedly" }))
      : await (mcp.call(tool, input) ?? ipc.callTool(tool, input))
    const shown = typeof outcome.output === "string" ? outcome.output : JSON.stringify(outcome.output) ?? "null"
    transcript({ kind: "tool_result", tool, ok: outcome.ok, output: capped(shown, "see the tool's answer in the conversation", 4_000) })
    return outcome
  }
  try {
    await core({
      turn: turn.right,
      system: [systemPrompt(turn.right, { skillsDir, workspaceDir }), unavailableSection(mcp.unavailable)].filter((p) => p !== "").join("\n\n"),
      tools,
      gateway: gatewaySocket !== "" && ipc.token !== null && ipc.token !== "" ? makeGatewayClient(gatewaySocket, ipc.token) : null,
      homeDir: env.PYNCHY_HOME_DIR !== undefined && env.PYNCHY_HOME_DIR !== "" ? env.PYNCHY_HOME_DIR : null,
      delta: (text) => send({ _tag: "text_delta", text }),
      reply: (text) => {
        transcript({ kind: "reply", text })
        send({ _tag: "reply", text })
      },
      callTool
    })
    transcript({ kind: "done" })
    send({ _tag: "done" })
  } catch (e) {
    if (e instanceof CoreFailed) fail(ipc, e.code, e.message, e.retryable)
    else if (isCodedError(e)) fail(ipc, e.code, e.message.slice(0, 300), e.retryable === true)
    else fail(ipc, "core_crashed", "the agent core threw", true)
  }
  await mcp.close()
  await ipc.close()
}

main().then(
  () => process.exit(0),
  () => process.exit(2)
)
