/**
 * The host uid a sandbox runs as when the host runs as root. Inside, the agent is uid 1000; outside
 * it must not be root, or a `chmod 4755` file it leaves in /workspace is setuid-root on the host.
 * The user is `pynchy-sandbox` where it exists (scripts/system/sandbox-user.sh makes it), else
 * `nobody` (65534). A host that is not root runs sandboxes as itself, as before.
 *
 * A leaf of the sandbox runtimes (who a sandbox runs as, folders handed to it).
 */
import * as fs from "node:fs"

export interface SandboxUser {
  readonly name: string
  readonly uid: number
  readonly gid: number
}

export const SANDBOX_USER_NAME = "pynchy-sandbox"
export const FALLBACK_USER: SandboxUser = { name: "nobody", uid: 65534, gid: 65534 }

const fromPasswd = (name: string): SandboxUser | undefined => {
  let text: string
  try {
    text = fs.readFileSync("/etc/passwd", "utf8")
  } catch {
    return undefined
  }
  for (const line of text.split("\n")) {
    const [user, , uid, gid] = line.split(":")
    if (user === name && uid !== undefined && gid !== undefined && /^\d+$/.test(uid) && /^\d+$/.test(gid)) {
      const u = { name, uid: Number(uid), gid: Number(gid) }
      // A user that maps to root would undo the point.
      return u.uid === 0 || u.gid === 0 ? undefined : u
    }
  }
  return undefined
}

export const hostIsRoot = (): boolean => process.getuid?.() === 0

/** The user sandboxes run as, or undefined when the host is not root (they run as the host's uid). */
export const sandboxUser = (): SandboxUser | undefined =>
  hostIsRoot() ? (fromPasswd(SANDBOX_USER_NAME) ?? FALLBACK_USER) : undefined

const O_DIR = fs.constants.O_RDONLY | fs.constants.O_DIRECTORY | fs.constants.O_NOFOLLOW
const MAX_ENTRIES = 200_000

/**
 * Hands an agent-writable folder to the sandbox user: the folder itself, and on the first hand-over
 * (the folder was not yet the user's) every root-owned entry inside, so a workspace from before
 * keeps working. The walk goes through directory descriptors (`/proc/self/fd/<fd>/<name>`, lchown,
 * O_NOFOLLOW), so an agent that swaps a folder for a symlink meanwhile cannot redirect it.
 */
export const giveToSandbox = (dir: string, user: SandboxUser): void => {
  const st = fs.lstatSync(dir)
  if (!st.isDirectory()) throw new Error("not a directory")
  if (st.uid === user.uid) return
  let budget = MAX_ENTRIES
  const walk = (fd: number, depth: number) => {
    const base = `/proc/self/fd/${fd}`
    for (const entry of fs.readdirSync(base, { withFileTypes: true })) {
      if (--budget < 0) return
      const p = `${base}/${entry.name}`
      let s: fs.Stats
      try {
        s = fs.lstatSync(p)
      } catch {
        continue
      }
      if (s.uid === 0) fs.lchownSync(p, user.uid, s.gid === 0 ? user.gid : s.gid)
      if (s.isDirectory() && depth < 64) {
        let child: number
        try {
          child = fs.openSync(p, O_DIR)
        } catch {
          continue
        }
        try {
          walk(child, depth + 1)
        } finally {
          fs.closeSync(child)
        }
      }
    }
  }
  const fd = fs.openSync(dir, O_DIR)
  try {
    fs.fchownSync(fd, user.uid, user.gid)
    walk(fd, 0)
  } finally {
    fs.closeSync(fd)
  }
}
