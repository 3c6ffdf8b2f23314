/** `edit_file`: replaces one exact piece of text; zero or several matches are a clear error. */
import { check } from "./input.js"
import { readRegular } from "./files.js"
import { refuse } from "./output.js"
import { resolvePath, shown } from "./paths.js"
import { objectSchema, type SandboxTool } from "./tool.js"
import { writeText } from "./write-file.js"

const MAX_BYTES = 10 * 1024 * 1024

const count = (text: string, part: string) => {
  let n = 0
  for (let at = text.indexOf(part); at >= 0; at = text.indexOf(part, at + part.length)) n++
  return n
}

export const editFile: SandboxTool = {
  name: "edit_file",
  description: "Replaces the text `old` with `new` in a file. `old` must occur exactly once: include enough surrounding text to make it unique.",
  inputSchema: objectSchema({
    path: { type: "string", description: "The file, relative to the workspace." },
    old: { type: "string", description: "The exact text to replace (must occur once)." },
    new: { type: "string", description: "The text to put in its place." }
  }, ["path", "old", "new"]),
  run: async (input) => {
    const c = check<{ path: string; old: string; new: string }>(input, {
      path: { type: "string", required: true, nonEmpty: true },
      old: { type: "string", required: true, nonEmpty: true },
      new: { type: "string", required: true }
    })
    if (!c.ok) return refuse(c.error)
    const abs = resolvePath(c.value.path)
    const read = readRegular(abs, MAX_BYTES)
    if (!read.ok) return refuse(`${shown(abs)}: ${read.error}`)
    if (read.cut) return refuse(`${shown(abs)}: larger than ${MAX_BYTES} bytes; edit it with bash`)
    const n = count(read.text, c.value.old)
    if (n === 0) return refuse(`${shown(abs)}: the text to replace was not found (it must match exactly, whitespace included)`)
    if (n > 1) return refuse(`${shown(abs)}: the text to replace occurs ${n} times; include more surrounding text so it occurs once`)
    const at = read.text.indexOf(c.value.old)
    const next = read.text.slice(0, at) + c.value.new + read.text.slice(at + c.value.old.length)
    const line = read.text.slice(0, at).split("\n").length
    return writeText(abs, next, `edited ${shown(abs)} at line ${line}`)
  }
}
