/**
 * Per-workspace daily token budgets (UTC days). In memory: `seed` lets the host restore today's
 * spend from its event log at start.
 *
 * Admission reserves what a request may spend (its output cap plus an input estimate) and the
 * end of the request settles it: the reservation is released and the real usage added. Checking
 * spend alone let twenty parallel requests through a budget that fit five (each saw the spend
 * before any had finished).
 */
import type { GatewayBudgets } from "../config/gateway.js"

const DAY = 86_400_000

export type BudgetCheck =
  | { readonly ok: true }
  | {
    readonly ok: false
    readonly limit: number
    readonly used: number
    /** Held by requests in flight. */
    readonly reserved: number
    readonly resetsAt: number
  }

export class Budgets {
  private day = -1
  private readonly used = new Map<string, number>()
  /** Not cleared at midnight: requests in flight then still settle what they reserved. */
  private readonly reserved = new Map<string, number>()

  /** Daily limits of gateway keys (`key:<name>`), set from the key store. */
  private keyLimits = new Map<string, number>()

  constructor(private readonly config: GatewayBudgets) {}

  setKeyLimits(limits: ReadonlyMap<string, number>): void {
    this.keyLimits = new Map(limits)
  }

  limitOf(workspace: string): number | undefined {
    return this.keyLimits.get(workspace) ?? this.config.workspaces[workspace] ?? this.config.dailyTokens
  }

  private roll(now: number) {
    const day = Math.floor(now / DAY)
    if (day !== this.day) {
      this.day = day
      this.used.clear()
    }
  }

  /**
   * Whether `tokens` more fit today beside what is spent and reserved (0: whether any is left).
   * Once spent plus reserved reaches the limit, nothing fits.
   */
  check(workspace: string, now: number, tokens = 0): BudgetCheck {
    const limit = this.limitOf(workspace)
    if (limit === undefined) return { ok: true }
    this.roll(now)
    const used = this.used.get(workspace) ?? 0
    const reserved = this.reserved.get(workspace) ?? 0
    return used + reserved < limit && used + reserved + tokens <= limit
      ? { ok: true }
      : { ok: false, limit, used, reserved, resetsAt: (this.day + 1) * DAY }
  }

  /** Holds `tokens` for a request in flight; pair with exactly one `release` of the same amount. */
  reserve(workspace: string, tokens: number): void {
    if (tokens <= 0 || this.limitOf(workspace) === undefined) return
    this.reserved.set(workspace, (this.reserved.get(workspace) ?? 0) + tokens)
  }

  release(workspace: string, tokens: number): void {
    if (tokens <= 0 || this.limitOf(workspace) === undefined) return
    const left = (this.reserved.get(workspace) ?? 0) - tokens
    if (left > 0) this.reserved.set(workspace, left)
    else this.reserved.delete(workspace)
  }

  add(workspace: string, tokens: number, now: number): void {
    if (tokens <= 0) return
    this.roll(now)
    this.used.set(workspace, (this.used.get(workspace) ?? 0) + tokens)
  }

  /** Restores the spend of `now`'s day (from persisted usage events). */
  seed(workspace: string, tokens: number, now: number): void {
    this.add(workspace, tokens, now)
  }

  today(now: number): Record<string, { used: number; reserved: number; limit: number | null }> {
    this.roll(now)
    const out: Record<string, { used: number; reserved: number; limit: number | null }> = {}
    for (const [ws, used] of this.used) out[ws] = { used, reserved: this.reserved.get(ws) ?? 0, limit: this.limitOf(ws) ?? null }
    for (const [ws, reserved] of this.reserved) out[ws] ??= { used: 0, reserved, limit: this.limitOf(ws) ?? null }
    return out
  }
}
