/** `read_file`: a text file's lines, numbered, from `offset` (1-based) for `limit` lines. */
import { check } from "./input.js"
import { readRegular, looksBinary } from "./files.js"
import { capped, ok, refuse } from "./output.js"
import { resolvePath, shown } from "./paths.js"
import { objectSchema, type SandboxTool } from "./tool.js"

const MAX_BYTES = 50 * 1024 * 1024
const DEFAULT_LIMIT = 2_000

export const readFile: SandboxTool = {
  name: "read_file",
  description: `Reads a text file (path relative to the workspace). Lines are numbered; use offset (first line, 1-based) and limit (default ${DEFAULT_LIMIT} lines) for long files.`,
  inputSchema: objectSchema({
    path: { type: "string", description: "The file, relative to the workspace." },
    offset: { type: "integer", minimum: 1, description: "First line to return (1-based)." },
    limit: { type: "integer", minimum: 1, description: "How many lines to return." }
  }, ["path"]),
  run: async (input) => {
    const c = check<{ path: string; offset?: number; limit?: number }>(input, {
      path: { type: "string", required: true, nonEmpty: true },
      offset: { type: "integer", min: 1 },
      limit: { type: "integer", min: 1 }
    })
    if (!c.ok) return refuse(c.error)
    const abs = resolvePath(c.value.path)
    const read = readRegular(abs, MAX_BYTES)
    if (!read.ok) return refuse(`${shown(abs)}: ${read.error}`)
    if (looksBinary(read.text)) return refuse(`${shown(abs)}: a binary file (${read.size} bytes); inspect it with bash (xxd, file)`)
    const lines = read.text.split("\n")
    if (lines.at(-1) === "") lines.pop()
    const from = (c.value.offset ?? 1) - 1
    const to = Math.min(lines.length, from + (c.value.limit ?? DEFAULT_LIMIT))
    if (lines.length === 0) return ok(`${shown(abs)}: empty file`)
    if (from >= lines.length) return refuse(`${shown(abs)} has ${lines.length} lines; offset ${from + 1} is past the end`)
    const body = lines.slice(from, to).map((l, i) => `${from + i + 1}\t${l}`).join("\n")
    const more = to < lines.length ? `\n[lines ${from + 1}-${to} of ${lines.length}; read on with offset ${to + 1}]` : ""
    const tooBig = read.cut ? `\n[only the first ${MAX_BYTES} bytes of ${read.size} were read]` : ""
    return ok(capped(body, `read on with offset and limit`) + more + tooBig)
  }
}
