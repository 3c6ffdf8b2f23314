/**
 * Failed logins of the Control UI, limited per client (its remote address) and overall within a
 * sliding window. A client at either limit is refused before its token is looked at, so a right
 * guess during the wait tells nothing; a success is not counted and resets no one's failures.
 * Only failures inside the window are kept, so memory is bounded by the overall limit.
 */

export interface LoginLimits {
  readonly perClient: number
  readonly overall: number
  readonly windowMs: number
}

export type Attempt =
  | { readonly _tag: "Accepted"; readonly tokenHash: string }
  | { readonly _tag: "Refused" }
  | { readonly _tag: "Limited"; readonly waitMs: number; readonly scope: "client" | "overall" }

export class LoginLimiter {
  private readonly byClient = new Map<string, Array<number>>()
  private all: Array<number> = []

  constructor(private readonly limits: LoginLimits) {}

  /**
   * One login attempt at `now`: limited (with the time to wait), or `verify` decides it and a
   * failure is counted. Synchronous on purpose: concurrent attempts cannot all pass the check
   * before any of their failures is counted.
   */
  attempt(client: string, now: number, verify: () => string | undefined): Attempt {
    this.prune(now)
    const mine = this.byClient.get(client) ?? []
    const clientWait = this.waitOf(mine, this.limits.perClient, now)
    const overallWait = this.waitOf(this.all, this.limits.overall, now)
    if (clientWait > 0 || overallWait > 0) {
      return { _tag: "Limited", waitMs: Math.max(clientWait, overallWait), scope: clientWait >= overallWait ? "client" : "overall" }
    }
    const tokenHash = verify()
    if (tokenHash !== undefined) return { _tag: "Accepted", tokenHash }
    mine.push(now)
    this.byClient.set(client, mine)
    this.all.push(now)
    return { _tag: "Refused" }
  }

  /** Until the oldest failure that keeps `failures` at `limit` leaves the window (0: not at the limit). */
  private waitOf(failures: ReadonlyArray<number>, limit: number, now: number): number {
    if (failures.length < limit) return 0
    return Math.max(1, failures[failures.length - limit]! + this.limits.windowMs - now)
  }

  private prune(now: number): void {
    const since = now - this.limits.windowMs
    this.all = this.all.filter((t) => t > since)
    for (const [client, failures] of this.byClient) {
      const kept = failures.filter((t) => t > since)
      if (kept.length === 0) this.byClient.delete(client)
      else this.byClient.set(client, kept)
    }
  }
}
