/**
 * The agent cores the runner bundle carries, by name: what the host needs to know of them (which
 * gateway API each speaks) without importing their code, which runs only inside the sandbox.
 */
export interface BuiltinCoreInfo {
  readonly name: string
  readonly description: string
  /** Which gateway API it speaks; none for offline cores. */
  readonly api: "chat" | "messages" | "none"
}

export const BUILTIN_CORE_INFO: ReadonlyArray<BuiltinCoreInfo> = [
  { name: "openai", description: "OpenAI chat completions with tool calls, through the gateway", api: "chat" },
  { name: "anthropic", description: "Anthropic messages with tool use, through the gateway", api: "messages" },
  { name: "scripted", description: "Deterministic echo core for tests and offline demos", api: "none" }
]

export const builtinCoreInfo = (name: string): BuiltinCoreInfo | undefined => BUILTIN_CORE_INFO.find((c) => c.name === name)

/** Claude Code's permission modes a workspace may choose (`auto` needs Anthropic's classifier, so it is not offered). */
export const CLAUDE_CODE_PERMISSION_MODES = ["dontAsk", "acceptEdits", "bypassPermissions", "default", "plan"] as const
export type ClaudeCodePermissionMode = (typeof CLAUDE_CODE_PERMISSION_MODES)[number]

/**
 * The `claudeCode` defaults: its file and shell tools, which reach only the sandbox's folders,
 * allowed; anything else denied (`dontAsk`: nobody is there to answer a prompt). The workspace's
 * host actions are added as MCP tools; the host's policy and approvals still judge each call.
 */
export const CLAUDE_CODE_DEFAULTS = {
  permissionMode: "dontAsk" as ClaudeCodePermissionMode,
  maxTurns: 20,
  allowedTools: ["Bash", "Read", "Write", "Edit", "Glob", "Grep"] as ReadonlyArray<string>
}
