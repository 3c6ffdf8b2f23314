/**
 * What the Discord runtime takes from the gateway and from a channel's history: messages with
 * text or attachments (files), decoded one at a time (a MESSAGE_CREATE dispatch and a message of `GET /channels/:id/messages`
 * have the same shape). Anything else is dropped with a reason for the log (ids and what was
 * wrong, never the content). Also the durable cursor: the newest message id seen per channel.
 */
import { Either, Schema } from "effect"

const Snowflake = Schema.String.pipe(Schema.pattern(/^\d{1,20}$/, { message: () => "must be a snowflake" }))
const User = Schema.Struct({ id: Snowflake, username: Schema.optional(Schema.String), bot: Schema.optional(Schema.Boolean) })

export const DiscordMessage = Schema.Struct({
  id: Snowflake,
  channel_id: Snowflake,
  /** Absent in a direct message. */
  guild_id: Schema.optional(Snowflake),
  author: User,
  content: Schema.String,
  /** 0: a plain message, 19: a reply; the others are system messages (joins, pins...). */
  type: Schema.optionalWith(Schema.Int, { default: () => 0 }),
  timestamp: Schema.optional(Schema.String),
  mentions: Schema.optionalWith(Schema.Array(Schema.Struct({ id: Snowflake })), { default: () => [] }),
  referenced_message: Schema.optional(Schema.NullOr(Schema.Struct({ author: Schema.optional(Schema.Struct({ id: Snowflake })) }))),
  /** The files sent with it, each decoded on its own (`attachmentsOf`): one malformed entry does not drop the message. */
  attachments: Schema.optionalWith(Schema.Array(Schema.Unknown), { default: () => [] })
})
export type DiscordMessage = typeof DiscordMessage.Type

/** A file of a message, as Discord describes it: the runtime decides from this whether to download it. */
export const DiscordAttachment = Schema.Struct({
  id: Snowflake,
  filename: Schema.String,
  /** Discord's guess from the upload; absent for types it does not know. */
  content_type: Schema.optional(Schema.String),
  size: Schema.NonNegativeInt,
  url: Schema.String
})
export type DiscordAttachment = typeof DiscordAttachment.Type

const decodeAttachment = Schema.decodeUnknownEither(DiscordAttachment)

/** A message's attachments that decode, and how many did not. */
export const attachmentsOf = (m: DiscordMessage): { readonly attachments: ReadonlyArray<DiscordAttachment>; readonly malformed: number } => {
  const attachments: Array<DiscordAttachment> = []
  let malformed = 0
  for (const raw of m.attachments) {
    const decoded = decodeAttachment(raw)
    if (Either.isRight(decoded)) attachments.push(decoded.right)
    else malformed += 1
  }
  return { attachments, malformed }
}

const decodeMessage = Schema.decodeUnknownEither(DiscordMessage)
const decodeIds = Schema.decodeUnknownEither(Schema.Struct({ id: Schema.optional(Schema.Unknown), channel_id: Schema.optional(Schema.Unknown) }))

export type Decoded =
  /** Text, attachments, or both. */
  | { readonly _tag: "text"; readonly message: DiscordMessage }
  | { readonly _tag: "skip"; readonly reason: string }

const TEXT_TYPES = new Set([0, 19])

export const decodeMessageEvent = (u: unknown): Decoded => {
  const decoded = decodeMessage(u)
  if (Either.isLeft(decoded)) {
    const ids = decodeIds(u)
    return { _tag: "skip", reason: Either.isRight(ids) && typeof ids.right.id === "string" ? `malformed message ${ids.right.id.slice(0, 20)}` : "malformed message (no id)" }
  }
  const message = decoded.right
  if (!TEXT_TYPES.has(message.type)) return { _tag: "skip", reason: `message ${message.id}: system message type ${message.type}` }
  if (message.content.length === 0 && message.attachments.length === 0) {
    return { _tag: "skip", reason: `message ${message.id}: neither text nor files (an embed, a sticker, or the message content intent is off)` }
  }
  return { _tag: "text", message }
}

/** Who sent it, as the pipeline stores it: `@username`, else the user id. */
export const senderOf = (m: DiscordMessage): string => (m.author.username !== undefined ? `@${m.author.username}` : m.author.id)

/** Snowflakes grow with time: the later of two ids. */
export const laterId = (a: string | undefined, b: string): string => (a === undefined || BigInt(b) > BigInt(a) ? b : a)

/** Oldest first. */
export const byId = (a: DiscordMessage, b: DiscordMessage): number => (BigInt(a.id) < BigInt(b.id) ? -1 : BigInt(a.id) > BigInt(b.id) ? 1 : 0)

/** The cursor's position: the newest message id ingested per channel, as JSON. */
export type Positions = Readonly<Record<string, string>>
const decodePositions = Schema.decodeUnknownEither(Schema.parseJson(Schema.Record({ key: Snowflake, value: Snowflake })))

/** A stored position, or `undefined` when it is not one this runtime wrote. */
export const readPositions = (position: string): Positions | undefined => Either.getOrUndefined(decodePositions(position))
export const writePositions = (positions: Positions): string => JSON.stringify(positions)
