/**
 * What the Telegram runtime takes from a getUpdates batch: text messages, and photos and documents
 * (with their caption as the text), decoded one update at a time. Anything else (another update
 * type, a message with neither text nor a file, a malformed update) is
 * dropped with a reason for the log (the update id and what was wrong, never the content).
 */
import { Either, Schema } from "effect"

const Chat = Schema.Struct({ id: Schema.Number, type: Schema.String })
const User = Schema.Struct({ id: Schema.Number, is_bot: Schema.optional(Schema.Boolean), username: Schema.optional(Schema.String) })

const FileId = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(512))
const PhotoSize = Schema.Struct({ file_id: FileId, file_size: Schema.optional(Schema.Number) })
const Document = Schema.Struct({
  file_id: FileId,
  file_name: Schema.optional(Schema.String),
  mime_type: Schema.optional(Schema.String),
  file_size: Schema.optional(Schema.Number)
})

export const TextUpdate = Schema.Struct({
  update_id: Schema.Int,
  message: Schema.Struct({
    message_id: Schema.Int,
    date: Schema.optional(Schema.Number),
    chat: Chat,
    from: Schema.optional(User),
    text: Schema.optional(Schema.String),
    caption: Schema.optional(Schema.String),
    photo: Schema.optional(Schema.Array(PhotoSize).pipe(Schema.minItems(1))),
    document: Schema.optional(Document),
    reply_to_message: Schema.optional(Schema.Struct({ from: Schema.optional(User) }))
  }).pipe(Schema.filter((m) => m.text !== undefined || m.photo !== undefined || m.document !== undefined))
})
export type TextUpdate = typeof TextUpdate.Type

const decodeText = Schema.decodeUnknownEither(TextUpdate)
const decodeId = Schema.decodeUnknownEither(Schema.Struct({ update_id: Schema.Int }))

export type Decoded =
  | { readonly _tag: "text"; readonly update: TextUpdate }
  | { readonly _tag: "skip"; readonly updateId: number; readonly reason: string }
  | { readonly _tag: "malformed" }

export const decodeUpdate = (u: unknown): Decoded => {
  const id = decodeId(u)
  if (Either.isLeft(id)) return { _tag: "malformed" }
  const text = decodeText(u)
  if (Either.isRight(text)) return { _tag: "text", update: text.right }
  const message = (u as { message?: unknown }).message
  const reason = message === undefined
    ? `unsupported update type (${Object.keys(u as object).filter((k) => k !== "update_id").join(", ") || "empty"})`
    : ["text", "photo", "document"].some((k) => (message as Record<string, unknown>)[k] !== undefined) ? "malformed message" : "a message with neither text nor a file"
  return { _tag: "skip", updateId: id.right.update_id, reason }
}

/** The body of a webhook request is an update at least this far: an object with an integer update_id. */
export const hasUpdateId = (u: unknown): boolean => Either.isRight(decodeId(u))

/** The next offset after a batch: past the highest update id it held (malformed ones included when they have an id). */
export const nextOffset = (batch: ReadonlyArray<unknown>, current: number): number => {
  let next = current
  for (const u of batch) {
    const id = decodeId(u)
    if (Either.isRight(id) && id.right.update_id + 1 > next) next = id.right.update_id + 1
  }
  return next
}

/** Who sent it, as the pipeline stores it: the username, else the numeric user id. */
export const senderOf = (update: TextUpdate): string =>
  update.message.from?.username !== undefined ? `@${update.message.from.username}` : String(update.message.from?.id ?? update.message.chat.id)

/**
 * The receipt of an update: its update id, with the chat and message ids, because Telegram may
 * restart update ids at random after a week without updates; an old receipt must not swallow a
 * new message then.
 */
export const receiptOf = (update: TextUpdate): string => `${update.update_id}:${update.message.chat.id}:${update.message.message_id}`

/** The text of a message: its text, or the caption of a photo or document. */
export const textOf = (update: TextUpdate): string => update.message.text ?? update.message.caption ?? ""

export interface Attachment {
  readonly fileId: string
  readonly name: string
  readonly mimeType: string | undefined
  readonly size: number | undefined
}

/** The file a message carries: a document, or the largest size of a photo (Telegram sends photos as JPEG). */
export const attachmentOf = (update: TextUpdate): Attachment | undefined => {
  const { document, message_id, photo } = update.message
  if (document !== undefined) return { fileId: document.file_id, name: document.file_name ?? `document-${message_id}`, mimeType: document.mime_type, size: document.file_size }
  const largest = photo?.at(-1)
  return largest === undefined ? undefined : { fileId: largest.file_id, name: `photo-${message_id}.jpg`, mimeType: "image/jpeg", size: largest.file_size }
}
