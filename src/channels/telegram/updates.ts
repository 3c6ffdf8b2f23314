/**
 * What the Telegram runtime takes from a getUpdates batch: text messages, decoded one update at a
 * time. Anything else (another update type, a message without text, a malformed update) is
 * dropped with a reason for the log (the update id and what was wrong, never the content).
 */
import { Either, Schema } from "effect"

const Chat = Schema.Struct({ id: Schema.Number, type: Schema.String })
const User = Schema.Struct({ id: Schema.Number, is_bot: Schema.optional(Schema.Boolean), username: Schema.optional(Schema.String) })

export const TextUpdate = Schema.Struct({
  update_id: Schema.Int,
  message: Schema.Struct({
    message_id: Schema.Int,
    date: Schema.optional(Schema.Number),
    chat: Chat,
    from: Schema.optional(User),
    text: Schema.String,
    reply_to_message: Schema.optional(Schema.Struct({ from: Schema.optional(User) }))
  })
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
    : typeof (message as { text?: unknown }).text === "string" ? "malformed message" : "a message without text"
  return { _tag: "skip", updateId: id.right.update_id, reason }
}

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
