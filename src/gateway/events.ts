/**
 * What the gateway tells the host. Usage events are the accounting record (persist them: the
 * events table); budget events mean a user should be told; cooldown events explain failovers.
 * None carries message content or a credential.
 */
import type { Api } from "./catalog.js"

export interface UsageEvent {
  readonly type: "gateway.usage"
  readonly at: number
  readonly workspace: string
  readonly conversationId: string
  /** The turn whose token made the request; null for gateway keys and tokens minted without one. */
  readonly turnId: number | null
  /** The public model name the client asked for. */
  readonly model: string
  readonly deployment: string
  readonly api: Api
  readonly stream: boolean
  readonly status: number
  /** ok; upstream_error (a non-2xx passed through); dropped (upstream failed mid-answer); client_closed. */
  readonly outcome: "ok" | "upstream_error" | "dropped" | "client_closed"
  readonly inputTokens: number
  readonly outputTokens: number
  readonly cacheReadTokens: number
  readonly cacheWriteTokens: number
  /** What the budgets were charged. */
  readonly totalTokens: number
  /**
   * True when the upstream may have spent tokens the gateway could not read (an answer without
   * usage, or one cut before its usage came): `totalTokens` is then the request's reservation.
   */
  readonly estimated: boolean
  /** Gateway receipt to last byte. */
  readonly durationMs: number
  /** Attempts after the first. */
  readonly retries: number
}

export interface BudgetExceededEvent {
  readonly type: "gateway.budget_exceeded"
  readonly at: number
  readonly workspace: string
  readonly conversationId: string
  readonly turnId: number | null
  /** The workspace's daily budget, or the turn token's own budget. */
  readonly scope: "workspace-daily" | "turn"
  readonly limit: number
  readonly used: number
  /** Held by requests in flight. */
  readonly reserved: number
  /** What this request would have reserved (its output cap plus an input estimate). */
  readonly requested: number
  /** When the daily budget resets (epoch millis), null for a turn budget. */
  readonly resetsAt: number | null
  /** A sentence fit to show the user. */
  readonly message: string
}

export interface CooldownEvent {
  readonly type: "gateway.cooldown"
  readonly at: number
  readonly deployment: string
  readonly until: number
  readonly reason: "failures" | "retry-after"
}

export type GatewayEvent = UsageEvent | BudgetExceededEvent | CooldownEvent
