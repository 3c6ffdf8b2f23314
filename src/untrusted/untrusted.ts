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

/** Reads at most `maxBytes + 1` bytes of an opened file: more than `maxBytes` means too large. */
const readCapped = async (opened: fsp.FileHandle, maxBytes: number): Promise<Buffer | string> => {
  try {
    const buffer = Buffer.alloc(maxBytes + 1)
    const { bytesRead } = await opened.read(buffer, 0, maxBytes + 1, 0)
    return bytesRead > maxBytes ? `larger than ${maxBytes} bytes` : buffer.subarray(0, bytesRead)
  } finally {
    await opened.close()
  }
}

/** Reads at most `maxBytes` of a regular file under `root`; anything else is refused with a reason (never its content). */
export const readUntrusted = async (root: string, file: string, maxBytes: number): Promise<UntrustedRead> => {
  const opened = await openRegular(root, file)
  if (typeof opened === "string") return refused(opened)
  const read = await readCapped(opened, maxBytes)
  return typeof read === "string" ? refused(read) : { _tag: "Read", text: read.toString("utf8") }
}

export type UntrustedBytes = { readonly _tag: "Read"; readonly bytes: Uint8Array } | { readonly _tag: "Refused"; readonly reason: string }

/** `readUntrusted`, for bytes (a file the agent leaves in its outbox). */
export const readUntrustedBytes = async (root: string, file: string, maxBytes: number): Promise<UntrustedBytes> => {
  const opened = await openRegular(root, file)
  if (typeof opened === "string") return { _tag: "Refused", reason: opened }
  const read = await readCapped(opened, maxBytes)
  return typeof read === "string" ? { _tag: "Refused", reason: read } : { _tag: "Read", bytes: new Uint8Array(read) }
}

/**
 * A folder under `root` (its path segments), opened without following any link, made when
 * `create` and missing. `path` names it through the open handle (`/proc/self/fd/<n>`), so a
 * segment swapped for a link after the check cannot redirect what is read, written or removed
 * through it. A reason string when a segment is not a real folder, or lies outside `root`.
 */
export interface UntrustedFolder {
  readonly path: string
  readonly close: () => Promise<void>
}

const DIR_FLAGS = O_RDONLY | O_NOFOLLOW | fs.constants.O_DIRECTORY

export const openUntrustedFolder = async (root: string, segments: ReadonlyArray<string>, create: boolean): Promise<UntrustedFolder | string> => {
  const realRoot = await fsp.realpath(root).catch(() => "")
  if (realRoot === "") return "missing"
  const first: fsp.FileHandle | undefined = await fsp.open(realRoot, DIR_FLAGS).catch(() => undefined)
  if (first === undefined) return "cannot be opened"
  let handle: fsp.FileHandle = first
  for (const segment of segments) {
    const at: string = `/proc/self/fd/${handle.fd}/${segment}`
    if (create) await fsp.mkdir(at, { mode: 0o755 }).catch(() => undefined)
    const next: fsp.FileHandle | string = await fsp.open(at, DIR_FLAGS).catch((e: NodeJS.ErrnoException) => e.code ?? "ERROR")
    await handle.close()
    if (typeof next === "string") return next === "ENOENT" ? "missing" : next === "ELOOP" || next === "ENOTDIR" ? `${segment} is not a folder` : "cannot be opened"
    handle = next
  }
  const opened = handle
  const real = await fsp.readlink(`/proc/self/fd/${opened.fd}`).catch(() => "")
  if (!inside(realRoot, real)) {
    await opened.close()
    return "outside its folder"
  }
  return { path: `/proc/self/fd/${opened.fd}`, close: () => opened.close() }
}

/**
 * Writes a file into a folder of the agent's (made when missing), whole or not at all: a temporary
 * file created new (never through a link), then renamed over `name`. Resolves to a reason on failure.
 */
export const writeUntrusted = async (root: string, segments: ReadonlyArray<string>, name: string, bytes: Uint8Array): Promise<string | undefined> => {
  const folder = await openUntrustedFolder(root, segments, true)
  if (typeof folder === "string") return folder
  const tmp = `${folder.path}/.${name}.${process.pid}-${Math.random().toString(36).slice(2)}.partial`
  try {
    const file = await fsp.open(tmp, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | O_NOFOLLOW, 0o644)
    try {
      await file.writeFile(bytes)
    } finally {
      await file.close()
    }
    await fsp.rename(tmp, `${folder.path}/${name}`)
    return undefined
  } catch (e) {
    await fsp.unlink(tmp).catch(() => undefined)
    return `cannot be written (${(e as NodeJS.ErrnoException).code ?? "error"})`
  } finally {
    await folder.close()
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
