/**
 * The host's only ways to touch what an agent can write (its workspace and session folders).
 * Anything there may be a symlink to a host file, a FIFO that blocks a reader forever, a device,
 * or a file of any size, swapped between two system calls. So: no path is followed (O_NOFOLLOW,
 * and the opened file's real path must lie inside the expected root), nothing blocks
 * (O_NONBLOCK, async reads), only regular files are read, and every read is capped.
 */
import * as fs from "node:fs"
import * as fsp from "node:fs/promises"
import * as path from "node:path"

export type UntrustedRead = { readonly _tag: "Read"; readonly text: string } | { readonly _tag: "Refused"; readonly reason: string }

const { O_RDONLY, O_NOFOLLOW, O_NONBLOCK } = fs.constants
const OPEN_FLAGS = O_RDONLY | O_NOFOLLOW | O_NONBLOCK

const refused = (reason: string): UntrustedRead => ({ _tag: "Refused", reason })

const inside = (root: string, file: string) => file === root || file.startsWith(root.endsWith("/") ? root : `${root}/`)

/** Opens a regular file under `root` without following links and checks what was opened. */
const openRegular = async (root: string, file: string): Promise<fsp.FileHandle | string> => {
  let before: fs.Stats
  try {
    before = await fsp.lstat(file)
  } catch {
    return "missing"
  }
  if (!before.isFile()) return before.isSymbolicLink() ? "a symbolic link" : "not a regular file"
  let handle: fsp.FileHandle
  try {
    handle = await fsp.open(file, OPEN_FLAGS)
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "ELOOP" ? "a symbolic link" : "cannot be opened"
  }
  try {
    const after = await handle.stat()
    // A parent folder swapped for a link would still open: the real path tells.
    const real = await fsp.readlink(`/proc/self/fd/${handle.fd}`).catch(() => "")
    const realRoot = await fsp.realpath(root).catch(() => "")
    if (!after.isFile() || after.ino !== before.ino || after.dev !== before.dev) throw new Error("replaced while opening")
    if (realRoot === "" || !inside(realRoot, real)) throw new Error("outside its folder")
    return handle
  } catch (e) {
    await handle.close()
    return (e as Error).message
  }
}

/** Reads at most `maxBytes` of a regular file under `root`; anything else is refused with a reason (never its content). */
export const readUntrusted = async (root: string, file: string, maxBytes: number): Promise<UntrustedRead> => {
  const opened = await openRegular(root, file)
  if (typeof opened === "string") return refused(opened)
  try {
    const buffer = Buffer.alloc(maxBytes + 1)
    const { bytesRead } = await opened.read(buffer, 0, maxBytes + 1, 0)
    return bytesRead > maxBytes ? refused(`larger than ${maxBytes} bytes`) : { _tag: "Read", text: buffer.subarray(0, bytesRead).toString("utf8") }
  } finally {
    await opened.close()
  }
}

export interface FolderAudit {
  /** Bytes in regular files (links are not followed). */
  readonly bytes: number
  readonly files: number
  /** Files whose setuid / setgid bits were removed. */
  readonly stripped: number
}

const SETID = 0o6000

/**
 * Walks a folder the agent wrote (never following links), sums its size and removes every
 * setuid and setgid bit. The bits are removed through a handle of the opened file, so a file
 * swapped for a link between the walk and the change cannot redirect it to a host file.
 */
export const auditFolder = async (root: string): Promise<FolderAudit> => {
  let bytes = 0
  let files = 0
  let stripped = 0
  const pending = [root]
  while (pending.length > 0) {
    const dir = pending.pop()!
    let entries: Array<fs.Dirent>
    try {
      entries = await fsp.readdir(dir, { withFileTypes: true })
    } catch {
      continue
    }
    for (const entry of entries) {
      const file = path.join(dir, entry.name)
      if (entry.isDirectory()) {
        pending.push(file)
        continue
      }
      if (!entry.isFile()) continue
      const stat = await fsp.lstat(file).catch(() => undefined)
      if (stat === undefined || !stat.isFile()) continue
      files++
      bytes += stat.size
      if ((stat.mode & SETID) === 0) continue
      const opened = await openRegular(root, file)
      if (typeof opened === "string") continue
      try {
        const now = await opened.stat()
        if ((now.mode & SETID) !== 0) {
          await opened.chmod(now.mode & 0o1777)
          stripped++
        }
      } finally {
        await opened.close()
      }
    }
  }
  return { bytes, files, stripped }
}
