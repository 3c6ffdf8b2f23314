/**
 * The end of a request: the reservation admission made is released and what the request spent is
 * charged to the workspace's day and the token, and a usage event records it. `account` runs once
 * per request on its own path; the response's close is the backstop for a path that never did.
 */
import { performance } from "node:perf_hooks"
import type { Budgets } from "./budgets.js"
import type { GatewayEvent } from "./events.js"
import type { Ctx, Outcome } from "./request.js"
import type { Usage } from "./usage.js"

export interface Accounting {
  /**
   * Settles the request: its reservation is released and what it spent is charged. `unread`: the
   * upstream may have spent tokens whose usage never came (an answer without usage, or one cut
   * before it), so at least the reservation is charged; otherwise cutting a stream just before
   * its usage would make output free. A later call (a straggler after the backstop) charges only
   * what exceeds the first charge.
   */
  readonly account: (ctx: Ctx, deployment: string, status: number, outcome: Outcome, usage: Usage | null, unread?: boolean) => void
  /** Settles a request whose client left (or whose token was revoked) before an answer was relayed. */
  readonly accountClosed: (ctx: Ctx, deployment: string) => void
}

export const makeAccounting = (budgets: Budgets, emit: (event: GatewayEvent) => void, now: () => number): Accounting => {
  const account = (ctx: Ctx, deployment: string, status: number, outcome: Outcome, usage: Usage | null, unread = false) => {
    const t = now()
    const { grant } = ctx
    const read = usage?.totalTokens ?? 0
    const estimated = unread && ctx.reserved > read
    let total = estimated ? ctx.reserved : read
    if (!ctx.accounted) {
      ctx.accounted = true
      budgets.release(grant.workspace, ctx.reserved)
      grant.reserved -= ctx.reserved
    } else {
      total -= ctx.charged
      if (total <= 0) return
    }
    ctx.charged += total
    if (total > 0) {
      budgets.add(grant.workspace, total, t)
      grant.used += total
    }
    emit({
      type: "gateway.usage",
      at: t,
      workspace: ctx.grant.workspace,
      conversationId: ctx.grant.conversationId,
      turnId: ctx.grant.turnId,
      model: ctx.model,
      deployment,
      api: ctx.api,
      stream: ctx.stream,
      status,
      outcome,
      inputTokens: usage?.inputTokens ?? 0,
      outputTokens: usage?.outputTokens ?? 0,
      cacheReadTokens: usage?.cacheReadTokens ?? 0,
      cacheWriteTokens: usage?.cacheWriteTokens ?? 0,
      totalTokens: total,
      estimated,
      durationMs: Math.round((performance.now() - ctx.received) * 1000) / 1000,
      retries: Math.max(0, ctx.attempts - 1)
    })
  }

  // An attempt live when the client left may have spent tokens nobody will read.
  const accountClosed = (ctx: Ctx, deployment: string) => account(ctx, deployment, 499, "client_closed", null, ctx.cut === true)

  return { account, accountClosed }
}
