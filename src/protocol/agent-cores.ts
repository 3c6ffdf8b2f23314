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
