/**
 * Catch-up after an outage longer than Slack's redelivery (about five minutes): the cursor
 * `(connection, "events")` holds, as JSON, the `ts` of the newest message ingested in each place
 * (a channel, or `<channel>/<thread_ts>`), and on every connection the runtime reads each place's
 * history after it (`conversations.history`, or `conversations.replies` for a thread). A message
 * is keyed by its channel and ts (`<channel>:<ts>`), the same whether it came as an event or from
 * history, so what both paths bring is ingested once.
 */
import { Either, Schema } from "effect"
import { isEmpty, MessageEvent } from "./events.js"

const Ts = Schema.String.pipe(Schema.pattern(/^\d+\.\d+$/))

/** The newest ingested ts per place. */
export type Positions = Readonly<Record<string, string>>
const decodePositions = Schema.decodeUnknownEither(Schema.parseJson(Schema.Record({ key: Schema.String, value: Ts })))

/** A stored position, or `undefined` when it is not one this runtime wrote (an older runtime kept only the last ts). */
export const readPositions = (position: string): Positions | undefined => Either.getOrUndefined(decodePositions(position))
export const writePositions = (positions: Positions): string => JSON.stringify(positions)

/** Slack's ts is `<seconds>.<sequence>`, both decimal: compared as numbers, part by part. */
export const compareTs = (a: string, b: string): number => {
  const [as, af = "0"] = a.split(".")
  const [bs, bf = "0"] = b.split(".")
  const s = BigInt(as!) - BigInt(bs!)
  return s !== 0n ? (s < 0n ? -1 : 1) : Math.sign(Number(BigInt(af) - BigInt(bf)))
}
export const laterTs = (a: string | undefined, b: string): string => (a === undefined || compareTs(b, a) > 0 ? b : a)

/** The receipt of a message: its channel and ts, whichever way it came. */
export const receiptOf = (event: { readonly channel: string; readonly ts: string }) => `${event.channel}:${event.ts}`

const HistoryMessage = Schema.Struct({
  type: Schema.Literal("message"),
  subtype: Schema.optional(Schema.Unknown),
  bot_id: Schema.optional(Schema.Unknown)
})
const decodeHistoryMessage = Schema.decodeUnknownEither(HistoryMessage)
const decodeEvent = Schema.decodeUnknownEither(MessageEvent)

/**
 * A message of a history page as the event it would have been (its channel added), or the reason
 * it is not ingested: a subtype other than `file_share` (edits, joins, bots' posts), a bot's message, neither text nor files, malformed.
 */
export const fromHistory = (channel: string, raw: unknown): { readonly _tag: "message"; readonly event: MessageEvent } | { readonly _tag: "skip"; readonly reason: string } => {
  const head = decodeHistoryMessage(raw)
  if (Either.isLeft(head)) return { _tag: "skip", reason: "malformed" }
  if (head.right.subtype !== undefined && head.right.subtype !== "file_share") return { _tag: "skip", reason: `message subtype ${String(head.right.subtype).slice(0, 40)}` }
  if (head.right.bot_id !== undefined) return { _tag: "skip", reason: "a bot's message" }
  const event = decodeEvent({ ...(raw as object), channel })
  if (Either.isLeft(event)) return { _tag: "skip", reason: "malformed message" }
  if (isEmpty(event.right)) return { _tag: "skip", reason: "a message with neither text nor files" }
  return { _tag: "message", event: event.right }
}
