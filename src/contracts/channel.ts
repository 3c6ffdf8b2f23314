/**
 * The outbound channel contract, as a plugin author sees it (plain Promises, no Effect needed).
 * A channel serves one connection name: deliveries of conversations on that connection go to it.
 */
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
