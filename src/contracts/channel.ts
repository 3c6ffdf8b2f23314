/**
 * The outbound channel contract, in two shapes. `Channel` is the one a plugin author sees (plain
 * Promises, no Effect needed); `NativeChannel` is the Effect-native one the built-in runtimes bind
 * and the host drives. A Promise channel becomes native in one place, `channelFromPromise`, when it
 * is bound. A channel serves one connection name: deliveries of conversations on that connection go to it.
 */
import { Cause, Data, Effect, Option } from "effect"

export interface OutboundDelivery {
  /** Stable across resends; a channel that can, derives its provider transaction id from it. */
  readonly idempotencyKey: string
  readonly conversationId: string
  readonly connection: string
  /** The provider place (room id, chat id, terminal session) the conversation lives in. */
  readonly place: string
  readonly kind: "reply" | "notice"
  readonly text: string
  /** How many times this delivery was handed to a channel before, across restarts. */
  readonly previousAttempts: number
  /**
   * The spoken form of the reply, for a channel that declares `audio` and a workspace with
   * `voice.enabled` (docs/channels.md). The same bytes on every send of this delivery; send them
   * after the text, as one more part (src/channels/parts.ts `audioKey`).
   */
  readonly audio?: OutboundAudio
  /**
   * Files the agent left in its outbox during the turn, for a channel that declares `files`: on
   * the turn's last reply, the same bytes on every send. Send each after the text (and audio) as
   * one more part (src/channels/parts.ts `fileKey`).
   */
  readonly files?: ReadonlyArray<OutboundFile>
}

/** A file a reply carries. */
export interface OutboundFile {
  /** 1-based, the file's part number (`<key>#file<n>`). */
  readonly n: number
  /** Safe as one path segment. */
  readonly name: string
  readonly mimeType: string
  readonly bytes: Uint8Array
}

/** A reply's audio, in the format its channel declared. */
export interface OutboundAudio {
  readonly format: "wav" | "ogg_opus"
  /** `audio/wav` or `audio/ogg`. */
  readonly mimeType: string
  readonly bytes: Uint8Array
}

export interface Channel {
  /** The connection name this channel delivers for (`terminal`, `http`, a Matrix connection name). */
  readonly name: string
  /**
   * True when sending the same delivery twice has the effect of once (Matrix txn ids). After a
   * crash between the call and its record, such a delivery is resent; otherwise it ends `unknown`.
   */
  readonly idempotentResends: boolean
  /**
   * Optional: the platform carries audio, in this format (`ogg_opus` for Telegram voice notes,
   * `wav` otherwise). The replies of a voice workspace then come with `audio`; without it, text only.
   */
  readonly audio?: "wav" | "ogg_opus"
  /**
   * Optional: the platform carries files. Replies then come with `files` (the agent's outbox);
   * without it, text only.
   */
  readonly files?: boolean
  /** Sends; resolves when the platform accepted it. A rejection marks the delivery failed. */
  send(delivery: OutboundDelivery): Promise<void>
  /**
   * Optional: shows a turn's progress (typing, streamed text). Called in order per turn, one call
   * at a time; its outcome is ignored, and a call that hangs stops further deltas of that turn.
   * A channel without it shows only the deliveries.
   */
  progress?(event: ProgressEvent): void | Promise<void>
  /** Optional lifecycle, called by the host in startup order and in reverse on shutdown. */
  start?(): Promise<void>
  close?(): Promise<void>
}

/**
 * What a channel may show while a turn runs. Progress is not a delivery: it is never recorded,
 * never resent, and may be dropped (a slow channel loses deltas, not the reply). The reply itself
 * still arrives once through `send`.
 */
export type ProgressEvent =
  | (ProgressTarget & { readonly type: "started" })
  /** Text of the reply being written; `replyKey` is the idempotency key its delivery will carry. */
  | (ProgressTarget & { readonly type: "delta"; readonly replyKey: string; readonly text: string })
  | (ProgressTarget & { readonly type: "ended" })

export interface ProgressTarget {
  readonly conversationId: string
  readonly connection: string
  /** The provider place of the conversation (room id, chat id, terminal session). */
  readonly place: string
  readonly turnId: number
}

/**
 * What a channel's `send` rejects with when the platform may or may not have the message (a
 * request that got no answer, a part left half-sent by a crash): the delivery ends `unknown` and
 * the user gets a notice, never a resend that could duplicate it.
 */
export class SendOutcomeUnknown extends Error {
  readonly outcomeUnknown = true
  constructor(reason: string) {
    super(reason)
    this.name = "SendOutcomeUnknown"
  }
}

export const isOutcomeUnknown = (e: unknown): boolean =>
  e !== null && typeof e === "object" && (e as { outcomeUnknown?: unknown }).outcomeUnknown === true

/**
 * A native channel's send failed. `outcomeUnknown`: the platform may or may not have it (a request
 * that got no answer, a part left half-sent), so the delivery ends `unknown` and is never resent.
 */
export class ChannelSendFailed extends Data.TaggedError("ChannelSendFailed")<{ readonly reason: string; readonly outcomeUnknown: boolean }> {
  override get message() {
    return this.reason
  }
}

export const NativeChannelTypeId: unique symbol = Symbol.for("pynchy/NativeChannel")

/** The Effect-native shape of a channel: the same fields as `Channel`, its calls as Effects. */
export interface NativeChannel {
  readonly [NativeChannelTypeId]: typeof NativeChannelTypeId
  readonly name: string
  readonly idempotentResends: boolean
  readonly audio?: "wav" | "ogg_opus"
  readonly files?: boolean
  /** Succeeds when the platform accepted the delivery. Interrupting it (the outbox's deadline) counts as no answer. */
  readonly send: (delivery: OutboundDelivery) => Effect.Effect<void, ChannelSendFailed>
  /** Optional, best-effort (see `Channel.progress`): it never fails the turn, and its failures are dropped. */
  readonly progress?: (event: ProgressEvent) => Effect.Effect<void>
}

export const nativeChannel = (channel: Omit<NativeChannel, typeof NativeChannelTypeId>): NativeChannel => ({
  [NativeChannelTypeId]: NativeChannelTypeId,
  ...channel
})

export const isNativeChannel = (u: unknown): u is NativeChannel => typeof u === "object" && u !== null && NativeChannelTypeId in u

/** A channel a plugin or a runtime bound: either shape. */
export type AnyChannel = Channel | NativeChannel

const reasonOf = (e: unknown) => (e instanceof Error ? e.message : String(e))

/**
 * A plugin's Promise channel in the native shape: a rejection is `ChannelSendFailed`, unknown when
 * it is a `SendOutcomeUnknown`; a progress call that throws or rejects is dropped.
 */
export const channelFromPromise = (channel: Channel): NativeChannel => {
  const progress = channel.progress
  return nativeChannel({
    name: channel.name,
    idempotentResends: channel.idempotentResends,
    ...(channel.audio !== undefined ? { audio: channel.audio } : {}),
    ...(channel.files !== undefined ? { files: channel.files } : {}),
    send: (delivery) =>
      Effect.tryPromise({
        try: () => channel.send(delivery),
        catch: (e) => new ChannelSendFailed({ reason: reasonOf(e), outcomeUnknown: isOutcomeUnknown(e) })
      }),
    ...(typeof progress === "function"
      ? { progress: (event: ProgressEvent) => Effect.tryPromise(async () => progress.call(channel, event)).pipe(Effect.catchAllCause(() => Effect.void)) }
      : {})
  })
}

export const asNativeChannel = (channel: AnyChannel): NativeChannel => (isNativeChannel(channel) ? channel : channelFromPromise(channel))

/**
 * A native channel as a plugin sees it (`ConnectionRuntimeContext.channels.get`): its calls run by
 * `run` in the host's runtime; an unknown outcome rejects with `SendOutcomeUnknown`.
 */
export const channelToPromise = (channel: NativeChannel, run: <A, E>(effect: Effect.Effect<A, E>) => Promise<A>): Channel => {
  const progress = channel.progress
  return {
    name: channel.name,
    idempotentResends: channel.idempotentResends,
    ...(channel.audio !== undefined ? { audio: channel.audio } : {}),
    ...(channel.files !== undefined ? { files: channel.files } : {}),
    send: (delivery) =>
      run(Effect.either(channel.send(delivery))).then((sent) => {
        if (sent._tag === "Left") throw sent.left.outcomeUnknown ? new SendOutcomeUnknown(sent.left.reason) : new Error(sent.left.reason)
      }),
    ...(progress !== undefined ? { progress: (event: ProgressEvent) => run(progress(event)) } : {})
  }
}

/**
 * A native send from an Effect that may fail with anything: a failure or a defect becomes
 * `ChannelSendFailed`, its outcome unknown where `unknown` says the platform may have it.
 * Interruption stays interruption.
 */
export const sendFailure = <E>(unknown: (e: E) => boolean) => <R>(send: Effect.Effect<void, E, R>): Effect.Effect<void, ChannelSendFailed, R> =>
  send.pipe(
    Effect.catchAllCause((cause) =>
      Cause.isInterruptedOnly(cause)
        ? Effect.failCause(cause as Cause.Cause<never>)
        : Effect.fail(new ChannelSendFailed({ reason: reasonOf(Cause.squash(cause)), outcomeUnknown: Option.exists(Cause.failureOption(cause), unknown) }))
    )
  )
