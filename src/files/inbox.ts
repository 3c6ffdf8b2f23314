/**
 * Files in: what a user sends with a message is saved in the workspace at
 * `inbox/<conversation>/<prefix>-<name>` before the message commits, so a committed message never
 * names a missing file. The prefix comes from the provider event id, so a redelivery of the same
 * event writes the same names. Refused files (too large, type not allowed, too many) are named in
 * the metadata with their reason; the message is stored either way.
 */
import { createHash } from "node:crypto"
import { Effect } from "effect"
import type { FilesConfig } from "../config/files.js"
import type { InboundFile } from "../domain/message.js"
import { writeUntrusted } from "../untrusted/untrusted.js"
import { mimeTypeOf, refusalOf, safeFolder, safeName } from "./names.js"

/** Where the workspace folder is mounted in a sandbox. */
export const SANDBOX_WORKSPACE = "/workspace"
export const INBOX = "inbox"

/** A saved file, as the message's metadata records it. */
export interface SavedFile {
  /** The path the agent sees (`/workspace/inbox/...`). */
  readonly path: string
  readonly name: string
  readonly type: string
  readonly size: number
}

export interface RefusedFile {
  readonly name: string
  readonly reason: string
}

export interface InboxResult {
  readonly files: ReadonlyArray<SavedFile>
  readonly refused: ReadonlyArray<RefusedFile>
}

export interface InboxTarget {
  readonly workspaceDir: string
  readonly conversationId: string
  /** What makes the names of this message's files unique and stable across redeliveries. */
  readonly eventKey: string
}

export const saveToInbox = (target: InboxTarget, files: ReadonlyArray<InboundFile>, limits: FilesConfig): Effect.Effect<InboxResult> =>
  Effect.promise(async () => {
    const prefix = createHash("sha256").update(target.eventKey).digest("hex").slice(0, 10)
    const folder = safeFolder(target.conversationId)
    const saved: Array<SavedFile> = []
    const refused: Array<RefusedFile> = []
    for (const [i, file] of files.entries()) {
      const type = file.mimeType ?? mimeTypeOf(file.name)
      const shown = safeName(file.name)
      const why = saved.length >= limits.maxFiles ? `too many files (the limit is ${limits.maxFiles})` : refusalOf(file.bytes.byteLength, type, limits)
      if (why !== undefined) {
        refused.push({ name: shown, reason: why })
        continue
      }
      const name = `${prefix}-${i + 1}-${shown}`
      const failed = await writeUntrusted(target.workspaceDir, [INBOX, folder], name, file.bytes)
      if (failed !== undefined) refused.push({ name: shown, reason: `not saved: the inbox ${failed}` })
      else saved.push({ path: `${SANDBOX_WORKSPACE}/${INBOX}/${folder}/${name}`, name: shown, type, size: file.bytes.byteLength })
    }
    return { files: saved, refused }
  })

/** The lines a turn's agent reads under a message that came with files: one per file, saved or refused. */
export const fileLines = (metadata: Record<string, unknown>): ReadonlyArray<string> => {
  const saved = listOf<SavedFile>(metadata.files, (f) => typeof f.path === "string" && typeof f.type === "string" && typeof f.size === "number")
  const refused = listOf<RefusedFile>(metadata.filesRefused, (f) => typeof f.name === "string" && typeof f.reason === "string")
  return [
    ...saved.map((f) => `[file: ${f.path} (${f.type}, ${f.size} bytes)]`),
    ...refused.map((f) => `[file not received: ${f.name}: ${f.reason}]`)
  ]
}

/** The entries of a metadata list that have the expected shape (metadata is free-form JSON). */
const listOf = <A>(value: unknown, ok: (entry: Record<string, unknown>) => boolean): ReadonlyArray<A> =>
  Array.isArray(value) ? (value.filter((e) => e !== null && typeof e === "object" && ok(e as Record<string, unknown>)) as Array<A>) : []
