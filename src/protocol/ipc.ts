/**
 * The one IPC contract between the host and the in-sandbox runner: the turn file the runner reads
 * (`$PYNCHY_TURN_FILE`, written by the host where the agent cannot) and every JSON line either side writes on the per-turn unix socket. Both
 * sides decode with these Schemas; a line that does not decode is answered with a non-fatal
 * `error` message and dropped, never thrown.
 */
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { SandboxToolName } from "./sandbox-tools.js"

/** A tool the agent may call: a host action, named for the LLM (`hello.greet` → `hello__greet`). */
export const ToolSpec = Schema.Struct({
  name: Schema.NonEmptyString,
  /** The host action id the tool calls. */
  action: Schema.NonEmptyString,
  description: Schema.String,
  inputSchema: Schema.Record({ key: Schema.String, value: Schema.Unknown })
})
export type ToolSpec = typeof ToolSpec.Type

/** A skill mounted read-only at `<skills dir>/<name>/` (its SKILL.md is there). */
export const SkillSpec = Schema.Struct({
  name: Schema.NonEmptyString,
  description: Schema.String,
  tier: Schema.String
})
export type SkillSpec = typeof SkillSpec.Type

export const TurnMessage = Schema.Struct({
  id: Schema.Number,
  sender: Schema.String,
  text: Schema.String,
  createdAt: Schema.Number
})

/** An earlier exchange of the conversation: a user's message or a delivered reply (never tool calls). */
export const HistoryEntry = Schema.Struct({
  role: Schema.Literal("user", "assistant"),
  text: Schema.String,
  /** Who wrote a user message, where a conversation has several people. */
  sender: Schema.optional(Schema.String)
})
export type HistoryEntry = typeof HistoryEntry.Type

/** An MCP server the runner starts inside the sandbox, over stdio (its env values resolved by the host). */
export const McpLaunchSpec = Schema.Struct({
  name: Schema.NonEmptyString,
  command: Schema.NonEmptyString,
  args: Schema.Array(Schema.String),
  env: Schema.Record({ key: Schema.String, value: Schema.String }),
  /** The allowlist of the server's tools; all when absent. */
  tools: Schema.optional(Schema.Array(Schema.String)),
  timeoutSeconds: Schema.Int.pipe(Schema.between(1, 600))
})
export type McpLaunchSpec = typeof McpLaunchSpec.Type

/** A tool server the workspace lists that offers nothing this turn, and why (told to the model). */
export const UnavailableServer = Schema.Struct({ server: Schema.String, code: Schema.String, reason: Schema.String })
export type UnavailableServer = typeof UnavailableServer.Type

/** The turn file: everything the runner needs except secrets (the token comes over the IPC socket: `turn_start`). */
export const TurnSpec = Schema.Struct({
  version: Schema.Literal(2),
  turnId: Schema.Number,
  conversationId: Schema.String,
  workspace: Schema.Struct({ id: Schema.String, instructions: Schema.String }),
  /** The summary of the conversation before `history` (null when none was made). */
  summary: Schema.NullOr(Schema.String),
  /** The earlier exchange, oldest first, within the workspace's history budget. */
  history: Schema.Array(HistoryEntry),
  /** The turn's new messages. */
  messages: Schema.Array(TurnMessage),
  skills: Schema.Array(SkillSpec),
  /** Host actions, called over IPC. */
  tools: Schema.Array(ToolSpec),
  /** Tools the runner runs itself inside the sandbox. */
  sandboxTools: Schema.Array(SandboxToolName),
  /** MCP servers the runner starts in the sandbox; their tools are offered as `<server>__<tool>`. */
  mcpServers: Schema.optional(Schema.Array(McpLaunchSpec)),
  /** The workspace's host MCP servers that offer no tools this turn (their tools are in `tools` otherwise). */
  unavailableServers: Schema.optional(Schema.Array(UnavailableServer)),
  /** The agent core to run. */
  core: Schema.NonEmptyString,
  /** The public model name to ask the gateway for; null when no provider is configured. */
  model: Schema.NullOr(Schema.String),
  /** Which API the LLM cores speak to the gateway. */
  api: Schema.Literal("chat", "messages"),
  /** Tool-call rounds an LLM core may make before it must answer. */
  maxToolRounds: Schema.Int.pipe(Schema.between(0, 100)),
  /** The workspace's `claudeCode` settings, defaults applied (for the claude-code core). */
  claudeCode: Schema.optional(Schema.Struct({
    permissionMode: Schema.String,
    maxTurns: Schema.Int,
    allowedTools: Schema.Array(Schema.String)
  })),
  /** The W3C trace context of the turn's sandbox span: the trace of the message this turn answers. */
  traceparent: Schema.optional(Schema.String)
})
export type TurnSpec = typeof TurnSpec.Type

/**
 * Set (to "1") in the runner's environment by a runtime that starts it non-dumpable (bwrap): the
 * runner then checks that it is, and refuses to use the turn token if not.
 */
export const UNTRACEABLE_ENV = "PYNCHY_RUNNER_UNTRACEABLE"

/** The words an error code may hold: codes reach logs, statuses and notices, so nothing else passes. */
export const CODE = /^[a-z0-9_]{1,64}$/
/** An error code as the other side sent it: anything that is not a plain code becomes `invalid_code`. */
export const ErrorCode = Schema.transform(Schema.String, Schema.String, {
  strict: true,
  decode: (code) => (CODE.test(code) ? code : "invalid_code"),
  encode: (code) => code
})

const ErrorFields = {
  code: ErrorCode,
  message: Schema.String.pipe(Schema.maxLength(2_000)),
  /** A fatal error from the runner ends the turn; a non-fatal one is recorded and ignored. */
  fatal: Schema.Boolean,
  retryable: Schema.optionalWith(Schema.Boolean, { default: () => false })
}

/** Runner → host. */
export const TextDelta = Schema.TaggedStruct("text_delta", { text: Schema.String })
export const ToolCall = Schema.TaggedStruct("tool_call", {
  callId: Schema.NonEmptyString.pipe(Schema.maxLength(100)),
  tool: Schema.NonEmptyString.pipe(Schema.maxLength(200)),
  input: Schema.Unknown
})
export const Reply = Schema.TaggedStruct("reply", { text: Schema.String.pipe(Schema.maxLength(1_000_000)) })
export const RunnerError = Schema.TaggedStruct("error", ErrorFields)
export const Done = Schema.TaggedStruct("done", {})
export const RunnerMessage = Schema.Union(TextDelta, ToolCall, Reply, RunnerError, Done)
export type RunnerMessage = typeof RunnerMessage.Type

/** Host → runner. */
export const ToolResult = Schema.TaggedStruct("tool_result", {
  callId: Schema.String,
  ok: Schema.Boolean,
  /** The action's output (ok) or the refusal: `{ code, message }`. */
  output: Schema.Unknown
})
export const HostError = Schema.TaggedStruct("error", ErrorFields)
/**
 * The host's first line on the connection: the turn's gateway token (null without a provider).
 * It never travels through the sandbox's command line, environment or files (docs/sandbox.md).
 */
export const TurnStart = Schema.TaggedStruct("turn_start", { token: Schema.NullOr(Schema.String.pipe(Schema.maxLength(200))) })
export const HostMessage = Schema.Union(TurnStart, ToolResult, HostError)
export type HostMessage = typeof HostMessage.Type

/** A line that is not one of the messages: what was wrong, never the line itself. */
export interface Malformed {
  readonly _tag: "Malformed"
  readonly reason: string
}

const KNOWN_TAGS = new Set(["text_delta", "tool_call", "reply", "error", "done", "tool_result", "turn_start"])

const decodeWith = <A, I>(schema: Schema.Schema<A, I>) => {
  const decode = Schema.decodeUnknownEither(schema, { onExcessProperty: "ignore" })
  return (line: string): Either.Either<A, Malformed> => {
    let raw: unknown
    try {
      raw = JSON.parse(line)
    } catch {
      return Either.left({ _tag: "Malformed", reason: "not JSON" })
    }
    return Either.mapLeft(decode(raw), () => {
      const tag = raw !== null && typeof raw === "object" ? (raw as { _tag?: unknown })._tag : undefined
      // Only a known tag is echoed back: the line itself may carry anything.
      const reason = typeof tag === "string" && KNOWN_TAGS.has(tag) ? `not a valid '${tag}' message here` : "unknown message type"
      return { _tag: "Malformed" as const, reason }
    })
  }
}

export const decodeRunnerLine = decodeWith(RunnerMessage)
export const decodeHostLine = decodeWith(HostMessage)
export const decodeTurnSpec = Schema.decodeUnknownEither(TurnSpec)

const encodeRunner = Schema.encodeSync(RunnerMessage)
const encodeHost = Schema.encodeSync(HostMessage)
export const runnerLine = (m: RunnerMessage): string => `${JSON.stringify(encodeRunner(m))}\n`
export const hostLine = (m: HostMessage): string => `${JSON.stringify(encodeHost(m))}\n`

/** Splits a byte stream into lines; a line longer than `maxLine` is reported and skipped. */
export const lineSplitter = (onLine: (line: string) => void, onOversize: () => void, maxLine = 4 * 1024 * 1024) => {
  let buffer = ""
  let skipping = false
  return (chunk: string) => {
    buffer += chunk
    let nl: number
    while ((nl = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, nl)
      buffer = buffer.slice(nl + 1)
      if (skipping) skipping = false
      else if (line.trim() !== "") onLine(line)
    }
    if (buffer.length > maxLine) {
      buffer = ""
      if (!skipping) onOversize()
      skipping = true
    }
  }
}

/** The tool name an LLM sees for an action id (function names allow `[a-zA-Z0-9_-]`). */
export const toolNameOf = (action: string): string => action.replace(/\./g, "__")
