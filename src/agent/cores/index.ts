/** The built-in agent cores the runner can run, by name (the `agent-cores` plugin contributes the same table). */
import { anthropic } from "./anthropic.js"
import { openai } from "./openai.js"
import { scripted } from "./scripted.js"
import type { CoreRun } from "./types.js"

export interface CoreEntry {
  readonly name: string
  readonly description: string
  /** Which gateway API it speaks; none for offline cores. */
  readonly api: "chat" | "messages" | "none"
  readonly run: CoreRun
}

export const BUILTIN_CORES: ReadonlyArray<CoreEntry> = [
  { name: "openai", description: "OpenAI chat completions with tool calls, through the gateway", api: "chat", run: openai },
  { name: "anthropic", description: "Anthropic messages with tool use, through the gateway", api: "messages", run: anthropic },
  { name: "scripted", description: "Deterministic echo core for tests and offline demos", api: "none", run: scripted }
]

export const coreNamed = (name: string): CoreEntry | undefined => BUILTIN_CORES.find((c) => c.name === name)
