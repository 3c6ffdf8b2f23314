import { Schema } from "effect"
import { ConnectionName, ConversationId, WorkspaceId } from "./ids.js"
import { WorkspaceScheduleFields } from "./schedule.js"
import { CLAUDE_CODE_DEFAULTS, CLAUDE_CODE_PERMISSION_MODES } from "../protocol/agent-cores.js"
import { SANDBOX_TOOLS, SandboxToolName } from "../protocol/sandbox-tools.js"
import { Place } from "./place.js"

export class SandboxSettings extends Schema.Class<SandboxSettings>("SandboxSettings")({
  /** Container runtime name; unset means the host default. */
  runtime: Schema.optional(Schema.NonEmptyString),
  memoryMb: Schema.optional(Schema.Int.pipe(Schema.between(16, 65_536))),
  maxProcesses: Schema.optional(Schema.Int.pipe(Schema.between(1, 65_536))),
  timeoutSeconds: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 86_400)), { default: () => 600 })
}) {}

/** How much of the conversation each turn's request carries (token budgets). */
export class MemorySettings extends Schema.Class<MemorySettings>("MemorySettings")({
  /** Earlier messages of the conversation, newest kept first. */
  historyTokens: Schema.optionalWith(Schema.Int.pipe(Schema.between(0, 1_000_000)), { default: () => 16_000 }),
  /** The summary of what no longer fits. */
  summaryTokens: Schema.optionalWith(Schema.Int.pipe(Schema.between(0, 100_000)), { default: () => 1_000 })
}) {}

/** How the `claude-code` core runs Claude Code (docs/agent-cores.md); read only by that core. */
export class ClaudeCodeSettings extends Schema.Class<ClaudeCodeSettings>("ClaudeCodeSettings")({
  /** The model (or model group) it asks the gateway for; default: the workspace's `model`. */
  model: Schema.optional(Schema.NonEmptyString),
  permissionMode: Schema.optionalWith(Schema.Literal(...CLAUDE_CODE_PERMISSION_MODES), { default: () => CLAUDE_CODE_DEFAULTS.permissionMode }),
  maxTurns: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 500)), { default: () => CLAUDE_CODE_DEFAULTS.maxTurns }),
  /** Claude Code tools allowed without asking (its own names: Bash, Read, Write, Edit, ...). */
  allowedTools: Schema.optionalWith(Schema.Array(Schema.NonEmptyString), { default: () => [...CLAUDE_CODE_DEFAULTS.allowedTools] })
}) {}

/** Spoken replies (docs/channels.md): the final replies also go out as audio where the channel carries audio. */
export class VoiceSettings extends Schema.Class<VoiceSettings>("VoiceSettings")({
  enabled: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  /** A `speechSynthesizer` contribution by name; default: the built-in `espeak`. */
  synthesizer: Schema.optional(Schema.NonEmptyTrimmedString),
  /** The synthesizer's own name of a voice (espeak-ng: `en`, `en-us`, `de`, ...); default: its own. */
  voice: Schema.optional(Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$/, { message: () => "must be 1-64 letters, digits, '.', '_', '+' or '-'" }))),
  /** The deadline of one reply's audio (synthesis, then conversion): `synthesize_timeout` after it. */
  timeoutSeconds: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 300)), { default: () => 20 })
}) {}

/** An agent context. Declared in config or registered at runtime (durable). */
export class Workspace extends Schema.Class<Workspace>("Workspace")({
  id: WorkspaceId,
  /** false: not served (a plugin's workspace of this id is turned off too). */
  enabled: Schema.optionalWith(Schema.Boolean, { default: () => true }),
  instructions: Schema.optionalWith(Schema.String, { default: () => "" }),
  /** Folder relative to the data dir's `workspaces/`, or absolute; defaults to the id. */
  folder: Schema.optional(Schema.NonEmptyString),
  /** Skill names enabled beyond the core tier. */
  skills: Schema.optionalWith(Schema.Array(Schema.NonEmptyString), { default: () => [] }),
  /** Host action ids this workspace may call. */
  actions: Schema.optionalWith(Schema.Array(Schema.NonEmptyString), { default: () => [] }),
  agentCore: Schema.optional(Schema.NonEmptyString),
  model: Schema.optional(Schema.NonEmptyString),
  /** Settings of the `claude-code` agent core (docs/agent-cores.md). */
  claudeCode: Schema.optional(ClaudeCodeSettings),
  sandbox: Schema.optionalWith(SandboxSettings, { default: () => SandboxSettings.make({}) }),
  memory: Schema.optionalWith(MemorySettings, { default: () => MemorySettings.make({}) }),
  /** The tools the runner offers inside the sandbox (default: all of them). */
  tools: Schema.optionalWith(Schema.Array(SandboxToolName), { default: () => [...SANDBOX_TOOLS] }),
  /** The MCP tool servers (by name, from `mcpServers:` or plugins) whose tools the agent is offered. */
  mcpServers: Schema.optionalWith(Schema.Array(Schema.NonEmptyString), { default: () => [] }),
  /** Spoken replies: `{ enabled, synthesizer?, voice? }`; off when absent. */
  voice: Schema.optional(VoiceSettings),
  /** Periodic turns: schedule, timezone, scheduledPrompt, deliverTo, ... (docs/schedules.md). */
  ...WorkspaceScheduleFields
}) {}

/** (connection, provider place) → workspace. A place of `*` matches every place of the connection. */
export class Route extends Schema.Class<Route>("Route")({
  connection: ConnectionName,
  place: Place,
  workspace: WorkspaceId,
  enabled: Schema.optionalWith(Schema.Boolean, { default: () => true }),
  /**
   * In a place with several people (a group chat), the assistant answers only messages that use
   * this word (or mention the bot); the others are stored and become context of the next turn.
   * Direct messages are always answered. Channels that know group chats apply it (src/channels/triggers.ts).
   */
  trigger: Schema.optional(Schema.NonEmptyTrimmedString.pipe(Schema.maxLength(100)))
}) {}

export class Conversation extends Schema.Class<Conversation>("Conversation")({
  id: ConversationId,
  connection: ConnectionName,
  place: Schema.String,
  workspace: WorkspaceId,
  createdAt: Schema.Number
}) {}

/** conversation → the agent's resumable session (an LLM session id or an attachment). */
export class SessionBinding extends Schema.Class<SessionBinding>("SessionBinding")({
  conversationId: ConversationId,
  kind: Schema.Literal("llm", "attachment"),
  ref: Schema.NonEmptyString,
  updatedAt: Schema.Number
}) {}
