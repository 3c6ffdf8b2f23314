/** What an agent core gets inside the sandbox: the turn, a way to speak, the host's tools, and the gateway. */
import type { ToolSpec, TurnSpec } from "../../sandbox/ipc.js"
import type { GatewayClient } from "../gateway-client.js"

export interface ToolOutcome {
  readonly ok: boolean
  /** The action's output, or `{ code, message }` when it was refused or failed. */
  readonly output: unknown
}

export interface CoreContext {
  readonly turn: TurnSpec
  /** Workspace instructions plus the mounted skills. */
  readonly system: string
  readonly tools: ReadonlyArray<ToolSpec>
  /** Streams partial text to the host (shown as typing/progress, not delivered). */
  readonly delta: (text: string) => void
  /** A final reply: delivered to the conversation. */
  readonly reply: (text: string) => void
  readonly callTool: (tool: string, input: unknown) => Promise<ToolOutcome>
  /** The LLM gateway with this turn's token; null when no provider is configured. */
  readonly gateway: GatewayClient | null
}

export type CoreRun = (context: CoreContext) => Promise<void>

/** A core's failure the host sees as the turn's failure code. */
export class CoreFailed extends Error {
  constructor(readonly code: string, reason: string, readonly retryable: boolean) {
    super(reason)
  }
}

export const NO_PROVIDER_NOTICE =
  "No LLM provider is configured: set OPENAI_API_KEY or ANTHROPIC_API_KEY, or add `providers:` to pynchy.yaml."
