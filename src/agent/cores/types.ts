/** What an agent core gets inside the sandbox: the turn, a way to speak, its tools, and the gateway. */
import type { TurnSpec } from "../../protocol/ipc.js"
import type { GatewayClient } from "../gateway-client.js"

export interface ToolOutcome {
  readonly ok: boolean
  /** The tool's output (text for sandbox tools), or `{ code, message }` when a host action was refused or failed. */
  readonly output: unknown
}

/** A tool as the model is offered it. */
export interface OfferedTool {
  readonly name: string
  readonly description: string
  readonly inputSchema: Readonly<Record<string, unknown>>
}

export interface CoreContext {
  readonly turn: TurnSpec
  /** Workspace instructions, the mounted skills, AGENTS.md and MEMORY.md, and the summary (context.ts). */
  readonly system: string
  /** The sandbox tools of the turn, then the host actions. */
  readonly tools: ReadonlyArray<OfferedTool>
  /** Streams partial text to the host (shown as typing/progress, not delivered). */
  readonly delta: (text: string) => void
  /** A final reply: delivered to the conversation. */
  readonly reply: (text: string) => void
  /** Runs a tool by its offered name: a sandbox tool in the runner, anything else as a host action over IPC. */
  readonly callTool: (tool: string, input: unknown) => Promise<ToolOutcome>
  /** The LLM gateway with this turn's token; null when no provider is configured. */
  readonly gateway: GatewayClient | null
  /**
   * A plugin core's durable folder for this conversation (its HOME, its session state): kept
   * across turns, empty again after `/new`; null for the built-in cores.
   */
  readonly homeDir: string | null
}

export type CoreRun = (context: CoreContext) => Promise<void>

/** A core's failure the host sees as the turn's failure code. */
export class CoreFailed extends Error {
  constructor(readonly code: string, reason: string, readonly retryable: boolean) {
    super(reason)
  }
}

/** A tool's outcome as the text of a tool result: sandbox tools answer text, host actions JSON. */
export const outcomeText = (outcome: ToolOutcome): string =>
  typeof outcome.output === "string" ? outcome.output : JSON.stringify(outcome.output) ?? "null"

/** A stream's error event as the turn's failure (the code only when it is a plain code). */
export const streamFailure = (error: unknown): CoreFailed => {
  const e = (error ?? {}) as { code?: unknown; type?: unknown }
  const c = typeof e.code === "string" ? e.code : typeof e.type === "string" ? e.type : undefined
  const code = c !== undefined && /^[a-z0-9_]{1,60}$/.test(c) ? c : "stream_interrupted"
  return new CoreFailed(code, "the LLM stream ended with an error", true)
}

export const NO_PROVIDER_NOTICE =
  "No LLM provider is configured: set OPENAI_API_KEY or ANTHROPIC_API_KEY, or add `providers:` to pynchy.yaml."
