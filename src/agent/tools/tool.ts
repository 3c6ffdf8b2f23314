/** The shape of a sandbox tool: a JSON Schema for the model, and a run that never throws. */
import type { SandboxToolName } from "../../protocol/sandbox-tools.js"
import type { ToolAnswer } from "./output.js"

export interface SandboxTool {
  readonly name: SandboxToolName
  readonly description: string
  readonly inputSchema: Record<string, unknown>
  /** Checks the input itself; every failure is an `ok: false` answer. */
  readonly run: (input: unknown) => Promise<ToolAnswer>
}

export const objectSchema = (properties: Record<string, unknown>, required: ReadonlyArray<string>) => ({
  type: "object",
  properties,
  required,
  additionalProperties: false
})
