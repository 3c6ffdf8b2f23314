/** `search_files`: lines matching a regular expression in the text files under a folder. */
import * as fs from "node:fs"
import { check } from "./input.js"
import { looksBinary, readRegular } from "./files.js"
import { capped, describeError, ok, refuse } from "./output.js"
import { resolvePath, shown } from "./paths.js"
import { objectSchema, type SandboxTool } from "./tool.js"
import { walk } from "./walk.js"

const MAX_ENTRIES = 20_000
const MAX_FILE_BYTES = 2 * 1024 * 1024
const MAX_MATCHES = 1_000
const MAX_LINE = 300

export const searchFiles: SandboxTool = {
  name: "search_files",
  description: "Searches the text files under a folder (default: the workspace) for lines matching a regular expression " +
    "(JavaScript syntax); answers 'path:line: text'. Binary and very large files are skipped.",
  inputSchema: objectSchema({
    pattern: { type: "string", description: "A regular expression, e.g. 'TODO|FIXME'." },
    path: { type: "string", description: "A folder or file, relative to the workspace (default '.')." }
  }, ["pattern"]),
  run: async (input) => {
    const c = check<{ pattern: string; path?: string }>(input, { pattern: { type: "string", required: true, nonEmpty: true }, path: { type: "string" } })
    if (!c.ok) return refuse(c.error)
    let re: RegExp
    try {
      re = new RegExp(c.value.pattern)
    } catch {
      return refuse("the pattern is not a valid regular expression")
    }
    const root = resolvePath(c.value.path)
    let files: Array<{ abs: string; label: string }>
    let truncated = false
    try {
      if (fs.statSync(root).isDirectory()) {
        files = []
        const it = walk(root, MAX_ENTRIES)
        let step = it.next()
        for (; step.done !== true; step = it.next()) if (step.value.kind === "file") files.push({ abs: step.value.abs, label: shown(step.value.abs) })
        truncated = step.value.truncated
      } else files = [{ abs: root, label: shown(root) }]
    } catch (e) {
      return refuse(`${shown(root)}: ${describeError(e)}`)
    }
    const hits: Array<string> = []
    let skipped = 0
    outer: for (const f of files) {
      const read = readRegular(f.abs, MAX_FILE_BYTES)
      if (!read.ok || read.cut || looksBinary(read.text)) {
        skipped++
        continue
      }
      const lines = read.text.split("\n")
      for (let i = 0; i < lines.length; i++) {
        if (!re.test(lines[i]!)) continue
        const line = lines[i]!.length > MAX_LINE ? `${lines[i]!.slice(0, MAX_LINE)}…` : lines[i]!
        hits.push(`${f.label}:${i + 1}: ${line}`)
        if (hits.length >= MAX_MATCHES) break outer
      }
    }
    const notes = [
      ...(hits.length >= MAX_MATCHES ? [`stopped at ${MAX_MATCHES} matches; narrow the pattern or the folder`] : []),
      ...(truncated ? [`only the first ${MAX_ENTRIES} entries were searched`] : []),
      ...(skipped > 0 ? [`${skipped} binary, unreadable or larger than ${MAX_FILE_BYTES} bytes skipped`] : [])
    ].map((n) => `\n[${n}]`).join("")
    if (hits.length === 0) return ok(`no matches under ${shown(root)}${notes}`)
    return ok(capped(hits.join("\n"), "narrow the pattern or the folder") + notes)
  }
}
