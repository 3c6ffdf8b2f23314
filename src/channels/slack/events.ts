/**
 * What the Slack runtime takes from an Events API callback: a user's message in a channel, a
 * private channel, a group DM or a DM, with text or files (subtype `file_share`; its files are
 * judged one by one in ./files.ts), decoded one event at a time. Anything else (another event
 * type, another message subtype such as an edit, a join or a bot's post, a malformed body) is
 * skipped with a reason for the log (the event id and what was wrong, never the content).
 */
import { Either, Schema } from "effect"

export const MessageEvent = Schema.Struct({
  type: Schema.Literal("message"),
  channel: Schema.String.pipe(Schema.pattern(/^[A-Z0-9]+$/)),
  channel_type: Schema.optional(Schema.String),
  subtype: Schema.optional(Schema.Literal("file_share")),
  user: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(255)),
  /** A file shared without a comment may come with no text. */
  text: Schema.optionalWith(Schema.String, { default: () => "" }),
  /** Slack's file objects, undecoded: a malformed one is refused by itself, not the message. */
  files: Schema.optional(Schema.Array(Schema.Unknown)),
  ts: Schema.String.pipe(Schema.pattern(/^\d+\.\d+$/)),
  thread_ts: Schema.optional(Schema.String.pipe(Schema.pattern(/^\d+\.\d+$/))),
  parent_user_id: Schema.optional(Schema.String),
  bot_id: Schema.optional(Schema.String)
})
export type MessageEvent = typeof MessageEvent.Type

export const EventCallback = Schema.Struct({
  type: Schema.Literal("event_callback"),
  event_id: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200)),
  event: MessageEvent
})
export type EventCallback = typeof EventCallback.Type

const decodeMessage = Schema.decodeUnknownEither(EventCallback)
const decodeEnvelope = Schema.decodeUnknownEither(Schema.Struct({
  type: Schema.Literal("event_callback"),
  event_id: Schema.String,
  event: Schema.Struct({ type: Schema.String, subtype: Schema.optional(Schema.Unknown) })
}))

export type Decoded =
  | { readonly _tag: "message"; readonly callback: EventCallback }
  | { readonly _tag: "skip"; readonly eventId: string; readonly reason: string }
  | { readonly _tag: "malformed" }

export const decodeCallback = (body: unknown): Decoded => {
  const envelope = decodeEnvelope(body)
  if (Either.isLeft(envelope)) return { _tag: "malformed" }
  const { event_id: eventId, event } = envelope.right
  if (event.type !== "message") return { _tag: "skip", eventId, reason: `event type ${event.type.slice(0, 40)}` }
  if (event.subtype !== undefined && event.subtype !== "file_share") return { _tag: "skip", eventId, reason: `message subtype ${String(event.subtype).slice(0, 40)}` }
  const message = decodeMessage(body)
  if (Either.isLeft(message)) return { _tag: "skip", eventId, reason: "malformed message" }
  if (message.right.event.bot_id !== undefined) return { _tag: "skip", eventId, reason: "a bot's message" }
  if (isEmpty(message.right.event)) return { _tag: "skip", eventId, reason: "a message with neither text nor files" }
  return { _tag: "message", callback: message.right }
}

/** Neither text nor files: nothing to ingest. */
export const isEmpty = (event: MessageEvent): boolean => event.text.trim() === "" && (event.files === undefined || event.files.length === 0)

/**
 * The place of a message: its channel, or `<channel>/<thread_ts>` for a reply in a thread. The
 * reply to a place goes to the same channel and thread.
 */
export const placeOf = (event: MessageEvent): string =>
  event.thread_ts !== undefined && event.thread_ts !== event.ts ? `${event.channel}/${event.thread_ts}` : event.channel

/** The channel and thread of a place (placeOf's inverse). */
export const targetOf = (place: string): { readonly channel: string; readonly threadTs: string | undefined } => {
  const slash = place.indexOf("/")
  return slash === -1 ? { channel: place, threadTs: undefined } : { channel: place.slice(0, slash), threadTs: place.slice(slash + 1) }
}

/** A one-to-one chat with the app: always answered. */
export const isDirect = (event: MessageEvent): boolean => event.channel_type === "im" || (event.channel_type === undefined && event.channel.startsWith("D"))
