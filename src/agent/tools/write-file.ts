/** `write_file`: creates or replaces a file (and its folders) with the given text. */
import * as fs from "node:fs"
import * as path from "node:path"
import { check } from "./input.js"
import { describeError, ok, refuse } from "./output.js"
import { resolvePath, shown } from "./paths.js"
import { objectSchema, type SandboxTool } from "./tool.js"

export const writeFile: SandboxTool = {
  name: "write_file",
  description: "Writes a text file (path relative to the workspace), creating its folders; an existing file is replaced.",
  inputSchema: objectSchema({
    path: { type: "string", description: "The file, relative to the workspace." },
    content: { type: "string", description: "The whole new content." }
  }, ["path", "content"]),
  run: async (input) => {
    const c = check<{ path: string; content: string }>(input, {
      path: { type: "string", required: true, nonEmpty: true },
      content: { type: "string", required: true }
    })
    if (!c.ok) return refuse(c.error)
    const abs = resolvePath(c.value.path)
    return writeText(abs, c.value.content, `wrote ${Buffer.byteLength(c.value.content)} bytes to ${shown(abs)}`)
  }
}

/** Writes only to a regular file or a new one: a FIFO would block, a folder cannot be replaced. */
export const writeText = (abs: string, content: string, done: string) => {
  try {
    const st = fs.statSync(abs, { throwIfNoEntry: false })
    if (st !== undefined && !st.isFile()) return refuse(`${shown(abs)}: ${st.isDirectory() ? "is a folder" : "not a regular file"}`)
    fs.mkdirSync(path.dirname(abs), { recursive: true })
    fs.writeFileSync(abs, content)
    return ok(done)
  } catch (e) {
    return refuse(`${shown(abs)}: ${describeError(e)}`)
  }
}
