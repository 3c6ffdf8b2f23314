/**
 * The tools the runner runs itself, inside the sandbox (the sandbox is their boundary; nothing
 * crosses to the host). A leaf module: the runner bundle imports it too.
 */
import * as Schema from "effect/Schema"

export const SANDBOX_TOOLS = ["bash", "read_file", "write_file", "edit_file", "list_files", "search_files"] as const
export const SandboxToolName = Schema.Literal(...SANDBOX_TOOLS)
export type SandboxToolName = typeof SandboxToolName.Type
