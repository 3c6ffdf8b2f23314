/** A bounded walk of a folder that never follows a link (no loops) and stops at a limit. */
import * as fs from "node:fs"
import * as path from "node:path"

export interface Entry {
  /** Relative to the walked folder, with `/`. */
  readonly rel: string
  readonly abs: string
  readonly kind: "file" | "dir" | "link" | "other"
}

/** Folders that hold tooling, not the workspace's work: listed, never entered. */
const NOT_ENTERED = new Set([".git", "node_modules"])

export function* walk(root: string, maxEntries: number): Generator<Entry, { readonly truncated: boolean }> {
  const queue: Array<string> = [""]
  let seen = 0
  while (queue.length > 0) {
    const rel = queue.shift()!
    let names: Array<fs.Dirent>
    try {
      names = fs.readdirSync(path.join(root, rel), { withFileTypes: true })
    } catch {
      continue
    }
    names.sort((a, b) => a.name.localeCompare(b.name))
    for (const d of names) {
      if (++seen > maxEntries) return { truncated: true }
      const r = rel === "" ? d.name : `${rel}/${d.name}`
      const kind = d.isDirectory() ? "dir" : d.isFile() ? "file" : d.isSymbolicLink() ? "link" : "other"
      yield { rel: r, abs: path.join(root, r), kind }
      if (kind === "dir" && !NOT_ENTERED.has(d.name)) queue.push(r)
    }
  }
  return { truncated: false }
}

/** A glob (`*`, `**`, `?`) as a test on a relative path; without a `/` it tests the base name. */
export const globTest = (glob: string): ((rel: string) => boolean) => {
  let re = ""
  for (let i = 0; i < glob.length; i++) {
    const ch = glob[i]!
    if (ch === "*" && glob[i + 1] === "*") {
      re += glob[i + 2] === "/" ? "(?:.*/)?" : ".*"
      i += glob[i + 2] === "/" ? 2 : 1
    } else if (ch === "*") re += "[^/]*"
    else if (ch === "?") re += "[^/]"
    else re += ch.replace(/[.+^${}()|[\]\\]/g, "\\$&")
  }
  const compiled = new RegExp(`^${re}$`)
  return glob.includes("/") ? (rel) => compiled.test(rel) : (rel) => compiled.test(rel.slice(rel.lastIndexOf("/") + 1))
}
