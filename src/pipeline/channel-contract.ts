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
}

export interface Channel {
  /** The connection name this channel delivers for (`terminal`, `http`, a Matrix connection name). */
  readonly name: string
  /**
   * True when sending the same delivery twice has the effect of once (Matrix txn ids). After a
   * crash between the call and its record, such a delivery is resent; otherwise it ends `unknown`.
   */
  readonly idempotentResends: boolean
  /** Sends; resolves when the platform accepted it. A rejection marks the delivery failed. */
  send(delivery: OutboundDelivery): Promise<void>
  /** Optional lifecycle, called by the host in startup order and in reverse on shutdown. */
  start?(): Promise<void>
  close?(): Promise<void>
}
