/** The sandbox tools the runner offers (only those named in the turn) and runs itself. */
import type { SandboxToolName } from "../../protocol/sandbox-tools.js"
import { bash } from "./bash.js"
import { editFile } from "./edit-file.js"
import { listFiles } from "./list-files.js"
import { readFile } from "./read-file.js"
import { searchFiles } from "./search-files.js"
import type { SandboxTool } from "./tool.js"
import { writeFile } from "./write-file.js"

export type { SandboxTool } from "./tool.js"

const ALL: ReadonlyArray<SandboxTool> = [bash, readFile, writeFile, editFile, listFiles, searchFiles]

/** The tools of `names`, in a fixed order, each once. */
export const sandboxTools = (names: ReadonlyArray<SandboxToolName>): ReadonlyArray<SandboxTool> => ALL.filter((t) => names.includes(t.name))
