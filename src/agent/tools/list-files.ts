/** `list_files`: the files and folders under a folder (recursive, folders end in `/`), optionally matching a glob. */
import * as fs from "node:fs"
import { check } from "./input.js"
import { capped, describeError, ok, refuse } from "./output.js"
import { resolvePath, shown } from "./paths.js"
import { objectSchema, type SandboxTool } from "./tool.js"
import { globTest, walk } from "./walk.js"

const MAX_ENTRIES = 5_000

export const listFiles: SandboxTool = {
  name: "list_files",
  description: "Lists files and folders under a folder (default: the workspace), recursively; folders end in '/'. " +
    "`pattern` is a glob such as '*.md' (matched against names) or 'notes/**/*.txt' (against paths).",
  inputSchema: objectSchema({
    path: { type: "string", description: "The folder, relative to the workspace (default '.')." },
    pattern: { type: "string", description: "A glob the listed paths must match." }
  }, []),
  run: async (input) => {
    const c = check<{ path?: string; pattern?: string }>(input ?? {}, { path: { type: "string" }, pattern: { type: "string", nonEmpty: true } })
    if (!c.ok) return refuse(c.error)
    const root = resolvePath(c.value.path)
    try {
      if (!fs.statSync(root).isDirectory()) return refuse(`${shown(root)}: not a folder`)
    } catch (e) {
      return refuse(`${shown(root)}: ${describeError(e)}`)
    }
    const matches = c.value.pattern === undefined ? () => true : globTest(c.value.pattern)
    const lines: Array<string> = []
    const it = walk(root, MAX_ENTRIES)
    let step = it.next()
    for (; step.done !== true; step = it.next()) {
      const e = step.value
      if (matches(e.rel)) lines.push(e.kind === "dir" ? `${e.rel}/` : e.kind === "link" ? `${e.rel} (link)` : e.rel)
    }
    const note = step.value.truncated ? `\n[stopped after ${MAX_ENTRIES} entries; list a sub-folder or use a pattern]` : ""
    if (lines.length === 0) return ok(`nothing${c.value.pattern === undefined ? "" : " matches"} under ${shown(root)}${note}`)
    return ok(capped(lines.join("\n"), "list a sub-folder or use a pattern") + note)
  }
}
