/**
 * Per-workspace daily token budgets (UTC days). In memory: `seed` lets the host restore today's
 * spend from its event log at start.
 */
import type { GatewayBudgets } from "./config.js"

const DAY = 86_400_000

export type BudgetCheck =
  | { readonly ok: true }
  | { readonly ok: false; readonly limit: number; readonly used: number; readonly resetsAt: number }

export class Budgets {
  private day = -1
  private readonly used = new Map<string, number>()

  constructor(private readonly config: GatewayBudgets) {}

  limitOf(workspace: string): number | undefined {
    return this.config.workspaces[workspace] ?? this.config.dailyTokens
  }

  private roll(now: number) {
    const day = Math.floor(now / DAY)
    if (day !== this.day) {
      this.day = day
      this.used.clear()
    }
  }

  check(workspace: string, now: number): BudgetCheck {
    const limit = this.limitOf(workspace)
    if (limit === undefined) return { ok: true }
    this.roll(now)
    const used = this.used.get(workspace) ?? 0
    return used < limit ? { ok: true } : { ok: false, limit, used, resetsAt: (this.day + 1) * DAY }
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

  today(now: number): Record<string, { used: number; limit: number | null }> {
    this.roll(now)
    const out: Record<string, { used: number; limit: number | null }> = {}
    for (const [ws, used] of this.used) out[ws] = { used, limit: this.limitOf(ws) ?? null }
    return out
  }
}
