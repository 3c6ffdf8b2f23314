/**
 * The node the bwrap runner is executed from: a copy of the host's node with mode 0111 (run, not
 * read). Executing a file the caller cannot read makes the kernel set the new process's "dumpable"
 * flag from `fs.suid_dumpable` (0 or 2: not dumpable) at that very exec, so the flag survives what
 * would reset it (the launcher's and bwrap's execs) and needs no prctl, which Node 20 lacks. A
 * non-dumpable runner's memory, environment and descriptors are closed to the tools it starts:
 * they share its uid but have no CAP_SYS_PTRACE (docs/sandbox.md, threat model).
 *
 * One copy per node binary (named by its device, inode, size and mtime), made once in a host-only
 * folder (`<dataDir>/runtime`, or a private temp folder for a runtime used without one), written
 * whole and renamed into place, so a crash mid-copy or two hosts at once leave no half file.
 */
import { createHash, randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

const known = new Map<string, string>()

const identity = (st: fs.Stats) => createHash("sha256").update(`${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}`).digest("hex").slice(0, 16)

/** A 0700 folder of this uid's in the temp dir (made private, or a fresh one if someone else holds the name). */
let fallback: string | undefined
const fallbackDir = (): string => {
  if (fallback !== undefined) return fallback
  const dir = path.join(os.tmpdir(), `pynchy-runtime-${process.getuid?.() ?? "u"}`)
  try {
    fs.mkdirSync(dir, { mode: 0o700 })
  } catch {
    // exists: checked below
  }
  const st = fs.lstatSync(dir)
  fallback = st.isDirectory() && st.uid === process.getuid?.() && (st.mode & 0o077) === 0 ? dir : fs.mkdtempSync(path.join(os.tmpdir(), "pynchy-runtime-"))
  return fallback
}

/** The exec-only copy of `node` in `dir` (default: a private temp folder), made if missing. */
export const execOnlyNode = (node: string, dir: string = fallbackDir()): string => {
  const st = fs.statSync(node)
  const target = path.join(dir, `node-${identity(st)}`)
  if (known.get(node) === target && fs.existsSync(target)) return target
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 })
  const existing = fs.lstatSync(target, { throwIfNoEntry: false })
  if (existing === undefined || !existing.isFile() || (existing.mode & 0o7777) !== 0o111 || existing.size !== st.size || existing.uid !== process.getuid?.()) {
    const partial = path.join(dir, `.node-${randomBytes(6).toString("hex")}.partial`)
    try {
      fs.copyFileSync(node, partial, fs.constants.COPYFILE_FICLONE)
      fs.chmodSync(partial, 0o111)
      fs.renameSync(partial, target)
    } finally {
      fs.rmSync(partial, { force: true })
    }
    // Copies of a node that has since been replaced (a running sandbox keeps its open inode).
    for (const name of fs.readdirSync(dir)) {
      if (name.startsWith("node-") && path.join(dir, name) !== target) fs.rmSync(path.join(dir, name), { force: true })
    }
  }
  known.set(node, target)
  return target
}
