/**
 * The in-sandbox agent runner (bundled to dist/runner.mjs). It reads the turn from
 * `$PYNCHY_TURN_FILE` (host-written, read-only to it), runs the selected core, and streams events to the host over
 * `$PYNCHY_IPC_SOCKET`. It knows only the gateway socket and its turn token; it writes a
 * transcript (no token) into the session folder. It never prints message content to stderr.
 */
import * as Either from "effect/Either"
import * as fs from "node:fs"
import * as path from "node:path"
import { decodeTurnSpec, type RunnerMessage, type TurnSpec } from "../sandbox/ipc.js"
import { coreNamed } from "./cores/index.js"
import { CoreFailed } from "./cores/types.js"
import { makeGatewayClient } from "./gateway-client.js"
import { connectIpc, type IpcClient } from "./ipc-client.js"

const env = process.env
const sessionDir = env.PYNCHY_SESSION_DIR ?? "/session"
const turnFile = env.PYNCHY_TURN_FILE ?? "/run/turn.json"
const skillsDir = env.PYNCHY_SKILLS_DIR ?? "/skills"
const transcriptFile = path.join(sessionDir, "transcript.jsonl")

const transcript = (entry: Record<string, unknown>) => {
  try {
    fs.appendFileSync(transcriptFile, `${JSON.stringify({ at: Date.now(), ...entry })}\n`)
  } catch {
    // the transcript is a record, not a requirement
  }
}

const systemPrompt = (turn: TurnSpec): string => {
  const parts = [turn.workspace.instructions.trim()]
  for (const skill of turn.skills) {
    try {
      const text = fs.readFileSync(path.join(skillsDir, skill.name, "SKILL.md"), "utf8")
      parts.push(`# Skill: ${skill.name}\n${text.replace(/^---\r?\n[\s\S]*?\r?\n---\r?\n?/, "").trim()}`)
    } catch {
      // a skill that cannot be read is left out
    }
  }
  return parts.filter((p) => p !== "").join("\n\n")
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
  const core = coreNamed(turn.right.core)
  if (core === undefined) {
    fail(ipc, "unknown_agent_core", `no agent core named '${turn.right.core}' in the runner`, false)
    return ipc.close()
  }
  const token = env.PYNCHY_TURN_TOKEN ?? ""
  const gatewaySocket = env.PYNCHY_GATEWAY_SOCKET ?? ""
  const send = (m: RunnerMessage) => ipc.send(m)
  try {
    await core.run({
      turn: turn.right,
      system: systemPrompt(turn.right),
      tools: turn.right.tools,
      gateway: gatewaySocket !== "" && token !== "" ? makeGatewayClient(gatewaySocket, token) : null,
      delta: (text) => send({ _tag: "text_delta", text }),
      reply: (text) => {
        transcript({ kind: "reply", text })
        send({ _tag: "reply", text })
      },
      callTool: async (tool, input) => {
        transcript({ kind: "tool_call", tool })
        const outcome = await ipc.callTool(tool, input)
        transcript({ kind: "tool_result", tool, ok: outcome.ok })
        return outcome
      }
    })
    transcript({ kind: "done" })
    send({ _tag: "done" })
  } catch (e) {
    if (e instanceof CoreFailed) fail(ipc, e.code, e.message, e.retryable)
    else fail(ipc, "core_crashed", "the agent core threw", true)
  }
  await ipc.close()
}

main().then(
  () => process.exit(0),
  () => process.exit(2)
)
