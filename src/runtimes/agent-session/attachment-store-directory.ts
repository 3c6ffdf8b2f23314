import { Effect, Either, Schema } from "effect"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { Attachment } from "../../domain/attachment.js"
import { problemsOf } from "../../domain/problems.js"
import { makeStateStore, type Records } from "./attachment-records.js"
import type { DirectoryOptions } from "./AttachmentStore.js"
import { AttachmentStoreUnreadable } from "./errors.js"

const FileContent = Schema.Struct({
  version: Schema.Literal(2),
  attachments: Schema.Array(Attachment)
})
const decodeFile = Schema.decodeUnknownEither(FileContent)
const encodeFile = Schema.encodeSync(Schema.parseJson(FileContent, { space: 2 }))

const AgentId = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/

/** `<dir>/<agentId>.attachments.json`; the agent id must be a plain name (no path separators). */
export const attachmentFileOf = (options: DirectoryOptions) => path.join(options.dir, `${options.agentId}.attachments.json`)

const load = (file: string) =>
  Effect.gen(function* () {
    if (!fs.existsSync(file)) return { records: [] } satisfies Records
    const text = yield* Effect.try({
      try: () => fs.readFileSync(file, "utf8"),
      catch: (e) => new AttachmentStoreUnreadable({ file, reason: `cannot read: ${(e as Error).message}` })
    })
    const json = yield* Effect.try({
      try: () => JSON.parse(text) as unknown,
      catch: (e) => new AttachmentStoreUnreadable({ file, reason: `not JSON: ${(e as Error).message}` })
    })
    const decoded = decodeFile(fromVersion1(json), { errors: "all" })
    if (Either.isLeft(decoded)) {
      const problems = problemsOf(decoded.left).map((p) => `${p.path || "(root)"}: ${p.reason}`)
      return yield* new AttachmentStoreUnreadable({ file, reason: `not an attachment store: ${problems.slice(0, 5).join("; ")}` })
    }
    const current = new Set<string>()
    for (const r of decoded.right.attachments) {
      if (r.state !== "current") continue
      if (current.has(r.conversationId)) {
        return yield* new AttachmentStoreUnreadable({ file, reason: `two current attachments for conversation '${r.conversationId}'` })
      }
      current.add(r.conversationId)
    }
    return { records: decoded.right.attachments } satisfies Records
  })

/**
 * A version 1 file (an earlier build) named the session `sessionRef` and kept statuses in another
 * vocabulary: the ids are kept, the last statuses dropped (the next read refills them).
 */
const fromVersion1 = (json: unknown) => {
  const v1 = json as { version?: unknown; attachments?: unknown }
  if (v1?.version !== 1 || !Array.isArray(v1.attachments)) return json
  return {
    version: 2,
    attachments: v1.attachments.map((a: Record<string, unknown>) => {
      const { sessionRef, ...rest } = a
      return { ...rest, sessionId: sessionRef, lastStatus: null }
    })
  }
}

/** Write to a temporary file in the same directory, fsync, then rename over: readers see old or new, never half. */
const writeAtomically = (file: string, next: Records) =>
  Effect.sync(() => {
    const tmp = `${file}.${process.pid}.${crypto.randomBytes(4).toString("hex")}.tmp`
    const fd = fs.openSync(tmp, "w", 0o600)
    try {
      fs.writeFileSync(fd, encodeFile({ version: 2, attachments: next.records }))
      fs.fsyncSync(fd)
    } finally {
      fs.closeSync(fd)
    }
    fs.renameSync(tmp, file)
  })

export const makeDirectoryStore = (options: DirectoryOptions) =>
  Effect.gen(function* () {
    const file = attachmentFileOf(options)
    if (!AgentId.test(options.agentId)) {
      return yield* new AttachmentStoreUnreadable({ file, reason: "the agent id must be 1-128 letters, digits, '.', '_' or '-'" })
    }
    yield* Effect.try({
      try: () => fs.mkdirSync(options.dir, { recursive: true, mode: 0o700 }),
      catch: (e) => new AttachmentStoreUnreadable({ file, reason: `cannot create ${options.dir}: ${(e as Error).message}` })
    })
    const initial = yield* load(file)
    return yield* makeStateStore(initial, (next) => writeAtomically(file, next))
  })
