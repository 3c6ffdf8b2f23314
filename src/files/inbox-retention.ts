/**
 * Inbox retention: the files the host saved into a workspace's `inbox/<conversation>/` are removed
 * `files.inboxRetentionDays` after they were written (0 keeps them); src/pipeline/InboxRetention.ts
 * sweeps at start and every 6 hours.
 *
 * The inbox lies in the workspace, which the agent writes, so everything there is untrusted:
 * - Only what the host put there is removed: names of the form `saveToInbox` gives
 *   (`<10 hex>-<n>-<name>`) and the temporary files a crash left (`.<name>.<pid>-<id>.partial`).
 *   Anything else the agent keeps there is its own and stays.
 * - No link is followed. `inbox` and each conversation folder are opened through
 *   `openUntrustedFolder` (O_NOFOLLOW at every segment, the real path checked to lie in the
 *   workspace); entries are examined with `lstat` and removed with `unlink` through the folder's
 *   handle, and neither follows the entry itself: a link named like a host file is removed as a
 *   link, its target untouched. A folder swapped for a link between the listing and the open is
 *   refused, not entered.
 * - Nothing is opened or read, so a FIFO or a device blocks nothing; folders are never removed
 *   but an empty conversation folder, with `rmdir`.
 * - Each sweep examines at most `MAX_ENTRIES` entries of a workspace, so an inbox of millions of
 *   names costs a bounded time; what is left goes in the next sweeps.
 *
 * The age is the file's modification time, which the agent can set. That gives it nothing it does
 * not have already: it can delete its inbox files itself, or keep them by renaming them, and the
 * space they take counts against its workspace either way.
 */
import { Effect } from "effect"
import * as fsp from "node:fs/promises"
import { openUntrustedFolder } from "../untrusted/untrusted.js"
import { INBOX } from "./inbox.js"

/** Entries examined per workspace per sweep. */
export const MAX_ENTRIES = 20_000

/** The names `saveToInbox` writes, and its temporary files. */
const HOST_NAMED = /^[0-9a-f]{10}-\d+-./
const PARTIAL = /^\..+\.\d+-[0-9a-z]+\.partial$/

export interface InboxSweep {
  readonly removed: number
  /** Entries examined (at most MAX_ENTRIES). */
  readonly examined: number
}

/** Removes the host's inbox files of one workspace last modified before `cutoff` (epoch ms). */
export const sweepInbox = (workspaceDir: string, cutoff: number): Effect.Effect<InboxSweep> =>
  Effect.promise(async () => {
    let removed = 0
    let examined = 0
    const inbox = await openUntrustedFolder(workspaceDir, [INBOX], false)
    if (typeof inbox === "string") return { removed, examined }
    try {
      const folders: Array<string> = []
      const listing = await fsp.opendir(inbox.path).catch(() => undefined)
      if (listing === undefined) return { removed, examined }
      for await (const entry of listing) {
        if (++examined > MAX_ENTRIES) break
        // A link or a file at this level is the agent's; only real folders are conversations.
        if (entry.isDirectory()) folders.push(entry.name)
      }
      for (const name of folders) {
        if (examined >= MAX_ENTRIES) break
        const folder = await openUntrustedFolder(workspaceDir, [INBOX, name], false)
        if (typeof folder === "string") continue
        let left = 0
        try {
          const files = await fsp.opendir(folder.path).catch(() => undefined)
          if (files === undefined) continue
          for await (const file of files) {
            if (++examined > MAX_ENTRIES) {
              left++
              break
            }
            if (file.isDirectory() || !(HOST_NAMED.test(file.name) || PARTIAL.test(file.name))) {
              left++
              continue
            }
            const at = `${folder.path}/${file.name}`
            const stat = await fsp.lstat(at).catch(() => undefined)
            if (stat === undefined) continue
            if (stat.isDirectory() || stat.mtimeMs >= cutoff) {
              left++
              continue
            }
            if (await fsp.unlink(at).then(() => true, () => false)) removed++
            else left++
          }
        } finally {
          await folder.close()
        }
        // rmdir removes only an empty folder, and not through a link (ENOTDIR).
        if (left === 0) await fsp.rmdir(`${inbox.path}/${name}`).catch(() => undefined)
      }
      return { removed, examined: Math.min(examined, MAX_ENTRIES) }
    } finally {
      await inbox.close()
    }
  })
