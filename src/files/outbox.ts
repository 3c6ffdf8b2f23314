/**
 * Files out: after a turn completes, the regular files the agent left at the top of
 * `/workspace/outbox/` go with the turn's last reply, then are removed so the next turn does not
 * send them again. Everything there is the agent's: it is read only through untrusted.ts (no link
 * followed, no FIFO or device opened, every read capped), and what is refused is named with why.
 */
import * as fs from "node:fs"
import * as fsp from "node:fs/promises"
import * as path from "node:path"
import { Effect } from "effect"
import type { FilesConfig } from "../config/files.js"
import { openUntrustedFolder, readUntrustedBytes } from "../untrusted/untrusted.js"
import type { RefusedFile } from "./inbox.js"
import { mimeTypeOf, refusalOf, safeName } from "./names.js"

export const OUTBOX = "outbox"

export interface OutgoingFile {
  readonly name: string
  readonly mimeType: string
  readonly bytes: Uint8Array
}

export interface OutboxTake {
  readonly files: ReadonlyArray<OutgoingFile>
  readonly refused: ReadonlyArray<RefusedFile>
  /** Removes what was taken and refused (the outbox is emptied of it); folders are left. */
  readonly clear: Effect.Effect<void>
}

const nothing: OutboxTake = { files: [], refused: [], clear: Effect.void }

/**
 * Whether the outbox holds anything but folders now (a real folder, not a link; nothing is
 * opened or read): a reply is held for its files only then, so a turn without files is not
 * slowed. What it names is taken, or refused, by `takeOutbox`.
 */
export const outboxHasFiles = (workspaceDir: string): Effect.Effect<boolean> =>
  Effect.sync(() => {
    const folder = path.join(workspaceDir, OUTBOX)
    try {
      // Most workspaces have no outbox: no exception (with its stack) for every turn that ends.
      return fs.lstatSync(folder, { throwIfNoEntry: false })?.isDirectory() === true && fs.readdirSync(folder, { withFileTypes: true }).some((e) => !e.isDirectory())
    } catch {
      return false
    }
  })

/** What the outbox of a workspace holds for the reply, within `limits`. */
export const takeOutbox = (workspaceDir: string, limits: FilesConfig): Effect.Effect<OutboxTake> =>
  Effect.promise(async (): Promise<OutboxTake> => {
    const folder = await openUntrustedFolder(workspaceDir, [OUTBOX], false)
    if (typeof folder === "string") return nothing
    try {
      const entries = (await fsp.readdir(folder.path, { withFileTypes: true }).catch(() => [])).filter((e) => !e.isDirectory()).sort((a, b) => a.name.localeCompare(b.name))
      const files: Array<OutgoingFile> = []
      const refused: Array<RefusedFile> = []
      const taken: Array<string> = []
      for (const entry of entries) {
        taken.push(entry.name)
        const name = safeName(entry.name)
        if (files.length >= limits.maxFiles) {
          refused.push({ name, reason: `too many files (the limit is ${limits.maxFiles})` })
          continue
        }
        const mimeType = mimeTypeOf(name)
        const typeRefusal = refusalOf(0, mimeType, limits)
        if (typeRefusal !== undefined) {
          refused.push({ name, reason: typeRefusal })
          continue
        }
        const read = await readUntrustedBytes(workspaceDir, `${folder.path}/${entry.name}`, limits.maxBytes)
        if (read._tag === "Refused") refused.push({ name, reason: read.reason.startsWith("larger than") ? `too large (${read.reason})` : read.reason })
        else files.push({ name, mimeType, bytes: read.bytes })
      }
      const clear = Effect.promise(async () => {
        const again = await openUntrustedFolder(workspaceDir, [OUTBOX], false)
        if (typeof again === "string") return
        try {
          for (const name of taken) await fsp.unlink(`${again.path}/${name}`).catch(() => undefined)
        } finally {
          await again.close()
        }
      })
      return { files, refused, clear }
    } finally {
      await folder.close()
    }
  })

/** The line a reply gets when some of the outbox was not sent. */
export const refusedLine = (refused: ReadonlyArray<RefusedFile>): string =>
  `(Not attached: ${refused.map((r) => `${r.name}: ${r.reason}`).join("; ")}.)`
