import { Either, Option, type ParseResult, Predicate, Schema, SchemaAST } from "effect"
import { ConnectionName, ConversationId, MessageId, TurnId } from "./ids.js"
import { Place } from "./place.js"

/** Free-form, JSON-serialisable metadata a provider attaches to a message. */
export const Metadata = Schema.Record({ key: Schema.String, value: Schema.Unknown })
export type Metadata = typeof Metadata.Type

/** The longest text a message may have, in characters, whichever way it comes in (docs/channels.md). */
export const MAX_TEXT_CHARS = 100_000

export const MessageText = Schema.String.pipe(Schema.maxLength(MAX_TEXT_CHARS))

/** A message a person writes (the HTTP API's `text`, `pynchy send`): 1 to MAX_TEXT_CHARS characters. */
export const WrittenText = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(MAX_TEXT_CHARS))

/** A file a user sent with a message; saved into the workspace inbox before the message commits. */
export const InboundFile = Schema.Struct({
  /** The user's name for it (made safe before it names anything on disk). */
  name: Schema.NonEmptyString.pipe(Schema.maxLength(1_000)),
  /** As the platform says; guessed from the name's extension when absent. */
  mimeType: Schema.optional(Schema.NonEmptyString.pipe(Schema.maxLength(255))),
  bytes: Schema.Uint8ArrayFromSelf
})
export type InboundFile = typeof InboundFile.Type

/**
 * What a connection hands to ingest. The provider event id is the dedup key (with the connection):
 * the same event ingested twice yields the original message. A fingerprint, when given, says what
 * the event id stands for: the same id with another fingerprint is a conflict, not a duplicate.
 */
export class InboundMessageInput extends Schema.Class<InboundMessageInput>("InboundMessageInput")({
  connection: ConnectionName,
  /** The provider's place: a room id, a chat id, a terminal session name. */
  place: Place,
  providerEventId: Schema.NonEmptyString.pipe(Schema.maxLength(255)),
  sender: Schema.NonEmptyString.pipe(Schema.maxLength(255)),
  text: MessageText,
  metadata: Schema.optionalWith(Metadata, { default: () => ({}) }),
  /**
   * A digest of the content this event id names, computed by the caller (e.g. SHA-256 hex of the
   * body). Stored with the receipt; compared only when the event id is already known.
   */
  fingerprint: Schema.optional(Schema.NonEmptyString.pipe(Schema.maxLength(255))),
  /** Files sent with the message (`files:` in pynchy.yaml limits them; the refused ones are named in the metadata). */
  files: Schema.optional(Schema.Array(InboundFile).pipe(Schema.maxItems(1_000))),
  /** Advance this cursor in the same transaction (it never moves backwards). */
  cursor: Schema.optional(
    Schema.Struct({
      stream: Schema.NonEmptyString,
      position: Schema.String,
      /** Strictly increasing per (connection, stream); an older or equal one is ignored. */
      order: Schema.Number.pipe(Schema.finite())
    })
  )
}) {}

// The class's fields with `metadata` plainly optional (no default): their decoded and encoded
// sides are then the same, so a type guard over them accepts exactly what decoding accepts
// (test/pipeline/inbound-decode.test.ts holds the two equal over generated inputs).
const InboundMessageFields = Schema.Struct({ ...InboundMessageInput.fields, metadata: Schema.optional(Metadata) })

/** A decoded ingest payload: the class's fields, without a class instance per message (no `metadata` reads as empty). */
export type InboundMessage = typeof InboundMessageFields.Type

const inboundGuard = Schema.is(InboundMessageFields)
const inboundDecode = Schema.decodeUnknownEither(InboundMessageFields)
const GUARD_OPTIONS = { onExcessProperty: "error" } as const
const DECODE_OPTIONS = { errors: "all", onExcessProperty: "error" } as const
// What Schema.is hands a filter.
const FILTER_OPTIONS = { exact: true, onExcessProperty: "error" } as const

// The struct's guard, one field at a time: each field's own guard (from the same schemas) under
// the same options, the struct's part (an object, every required key, no other key) by hand. A
// string or number with refinements is checked by its refinements' own filters, without the
// parser's result per step; anything else by Schema.is. The struct guard walks the parser and
// costs ~4x this on a plain payload; a payload this does not vouch for takes the struct guard.
const guardOf = (ast: SchemaAST.AST): ((u: unknown) => boolean) => {
  switch (ast._tag) {
    case "StringKeyword":
      return Predicate.isString
    case "NumberKeyword":
      return Predicate.isNumber
    case "Refinement": {
      const from = guardOf(ast.from)
      return (u) => from(u) && Option.isNone(ast.filter(u, FILTER_OPTIONS, ast))
    }
    default: {
      const is = Schema.is(Schema.make(ast))
      return (u) => is(u, GUARD_OPTIONS)
    }
  }
}
const fieldGuards = new Map<string, { readonly required: boolean; readonly is: (u: unknown) => boolean }>(
  Object.entries(InboundMessageFields.fields).map(([key, field]) =>
    Schema.isSchema(field)
      ? [key, { required: true, is: guardOf(SchemaAST.typeAST(field.ast)) }]
      : [key, { required: false, is: guardOf(SchemaAST.typeAST((field as { readonly from: Schema.Schema.Any }).from.ast)) }]
  )
)
const requiredFields = [...fieldGuards.values()].filter((g) => g.required).length

/** True when the struct guard would be: a plain object whose own keys are all fields, every field valid. */
const fieldsValid = (input: object): boolean | undefined => {
  let required = 0
  for (const key of Reflect.ownKeys(input)) {
    // A symbol key is an unknown property too.
    if (typeof key !== "string") return undefined
    const guard = fieldGuards.get(key)
    if (guard === undefined) return undefined
    const value = (input as Record<string, unknown>)[key]
    if (guard.required) required++
    // An optional field may hold undefined, as if absent.
    else if (value === undefined) continue
    if (!guard.is(value)) return false
  }
  return required === requiredFields
}

const isInbound = (input: unknown): input is InboundMessage => {
  if (typeof input === "object" && input !== null && Object.getPrototypeOf(input) === Object.prototype) {
    const valid = fieldsValid(input)
    if (valid !== undefined) return valid
  }
  return inboundGuard(input, GUARD_OPTIONS)
}

/**
 * Decodes an ingest payload: unknown properties refused, every problem named. The hot path: a
 * valid payload is checked by a guard (no copy, no result per field) and used as it is; only a
 * refused one is decoded again, to say all that is wrong.
 */
export const decodeInboundMessage = (input: unknown): Either.Either<InboundMessage, ParseResult.ParseError> =>
  isInbound(input)
    ? Either.right(input.metadata !== undefined && Object.hasOwn(input.metadata, "__proto__") ? withoutProtoKey(input) : input)
    : inboundDecode(input, DECODE_OPTIONS)

/**
 * A metadata record with an own `__proto__` key (JSON.parse makes one from `{"__proto__": …}`),
 * without it. Rebuilding such a record by assignment, as the record decoder does, would make the
 * key's value the record's prototype: metadata whose fields are read through an object the sender
 * chose. The key is dropped instead, as the class's own decode drops it.
 */
const withoutProtoKey = (input: InboundMessage): InboundMessage => {
  const metadata: Record<string, unknown> = {}
  for (const key of Object.keys(input.metadata!)) if (key !== "__proto__") metadata[key] = input.metadata![key]
  return { ...input, metadata }
}

export const Direction = Schema.Literal("in", "out")
export type Direction = typeof Direction.Type

export class Message extends Schema.Class<Message>("Message")({
  id: MessageId,
  conversationId: ConversationId,
  direction: Direction,
  sender: Schema.String,
  text: Schema.String,
  metadata: Metadata,
  createdAt: Schema.Number,
  /** The completed turn that handled an inbound message. */
  handledBy: Schema.NullOr(TurnId),
  /** The W3C trace context of the span that ingested an inbound message (null when none was stored). */
  traceParent: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null })
}) {}

export class Receipt extends Schema.Class<Receipt>("Receipt")({
  connection: ConnectionName,
  providerEventId: Schema.String,
  messageId: MessageId
}) {}

export class Cursor extends Schema.Class<Cursor>("Cursor")({
  connection: ConnectionName,
  stream: Schema.String,
  position: Schema.String,
  order: Schema.Number,
  updatedAt: Schema.Number
}) {}

/** The outcome of one ingest. */
export interface Ingested {
  /** The new message, or for a known event id the message first ingested under it. */
  readonly messageId: MessageId
  readonly conversationId: ConversationId
  /** The event id was already known: no message was written. */
  readonly duplicate: boolean
  /**
   * Only with `duplicate`: the event id is known with another fingerprint, so this input is not the
   * message it names. Nothing was written (not even the cursor); the caller must not treat it as stored.
   * Never set when either side has no fingerprint.
   */
  readonly conflict: boolean
}

/**
 * The metadata flag of a group-chat message that did not use its route's trigger: stored, and
 * context of the next turn, but a turn of such messages only runs no agent (no reply).
 */
export const UNTRIGGERED = "untriggered"
export const isUntriggered = (m: { readonly metadata: Metadata }): boolean => m.metadata[UNTRIGGERED] === true
