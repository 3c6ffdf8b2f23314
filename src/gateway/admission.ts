/**
 * Who may send what: the turn token and its grant, the models it may use, its cap on requests in
 * flight, and the reservation a request holds against the budgets (settled by accounting.ts).
 * Each refusal answers the client itself, so the handler only stops.
 */
import type * as http from "node:http"
import type { Budgets } from "./budgets.js"
import type { Api } from "./catalog.js"
import type { GatewayConfig } from "../config/gateway.js"
import type { BudgetExceededEvent, GatewayEvent } from "./events.js"
import { errorJson, send } from "./replies.js"
import type { Grant, TokenTable } from "./tokens.js"

/** Output cap fields, across the three APIs; the largest one set is reserved. */
const capFields = ["max_tokens", "max_completion_tokens", "max_output_tokens"] as const
const MAX_RESERVATION = 2 ** 48

const tokenOf = (req: http.IncomingMessage): string | undefined => {
  const auth = req.headers.authorization
  if (typeof auth === "string" && auth.length > 7 && auth.slice(0, 7).toLowerCase() === "bearer ") return auth.slice(7).trim()
  const key = req.headers["x-api-key"]
  return typeof key === "string" && key !== "" ? key.trim() : undefined
}

/** Whether the grant's scope includes a public model name. */
export const mayUse = (grant: Grant, model: string): boolean => grant.models === null || grant.models.has(model)

export interface Admission {
  /** The live grant of the request's bearer or x-api-key token. */
  readonly grantOf: (req: http.IncomingMessage) => Grant | undefined
  /** Refuses (429, drained) a request over the token's in-flight cap; true when it did. */
  readonly overInFlightCap: (api: Api, req: http.IncomingMessage, res: http.ServerResponse, grant: Grant) => boolean
  /**
   * What a request may spend: its output cap (the largest it sets, times `n` choices) or the
   * configured default, plus an input estimate from the body's size.
   */
  readonly reservationOf: (body: Record<string, unknown>, bytes: number) => number
  /** Reserves `need` against the workspace's day and the token's own budget, or refuses with 429. */
  readonly admit: (api: Api, res: http.ServerResponse, grant: Grant, need: number) => boolean
}

export const makeAdmission = (
  tokens: TokenTable,
  budgets: Budgets,
  config: GatewayConfig,
  emit: (event: GatewayEvent) => void,
  now: () => number
): Admission => {
  const budgetConfig = config.budgets
  const inFlightCap = config.limits.inFlightPerToken
  const capWords = `its max_tokens, or ${budgetConfig.defaultMaxTokens} when it sets none, plus an estimate of its input`

  const grantOf = (req: http.IncomingMessage): Grant | undefined => {
    const token = tokenOf(req)
    return token === undefined ? undefined : tokens.lookup(token, now())
  }

  const overInFlightCap = (api: Api, req: http.IncomingMessage, res: http.ServerResponse, grant: Grant): boolean => {
    if (grant.inFlight.size < inFlightCap) return false
    req.resume()
    send(res, 429, errorJson(api, "rate_limit_error", `this token already has ${inFlightCap} requests in flight, the most it may have; send more when one has finished`), { "retry-after": "1" })
    return true
  }

  const reservationOf = (body: Record<string, unknown>, bytes: number): number => {
    let cap = 0
    for (const field of capFields) {
      const v = body[field]
      if (typeof v === "number" && Number.isFinite(v) && v > cap) cap = Math.ceil(v)
    }
    const n = typeof body.n === "number" && Number.isInteger(body.n) && body.n > 1 ? body.n : 1
    return Math.min(MAX_RESERVATION, (cap > 0 ? cap : budgetConfig.defaultMaxTokens) * n + Math.ceil(bytes / budgetConfig.inputBytesPerToken))
  }

  /** A 429 saying which budget refused and why, and the event that tells the user. */
  const refuse = (
    api: Api,
    res: http.ServerResponse,
    grant: Grant,
    at: number,
    scope: BudgetExceededEvent["scope"],
    need: number,
    { limit, reserved, resetsAt, used }: { limit: number; used: number; reserved: number; resetsAt: number | null }
  ): false => {
    const { conversationId, turnId, workspace } = grant
    const [who, budget] = scope === "turn"
      ? ["this turn", "its token budget"]
      : [workspace.startsWith("key:") ? `key '${workspace.slice(4)}'` : `workspace '${workspace}'`, "its daily token budget"]
    const why = used >= limit
      ? `${who} has used ${budget} (${used} of ${limit} tokens)`
      : `${who} cannot fit this request in ${budget}: it may use up to ${need} tokens (${capWords}), and ${used} of ${limit} are used and ${reserved} held by requests in flight`
    const message = resetsAt === null ? why : `${why}; it resets at ${new Date(resetsAt).toISOString()}`
    emit({ type: "gateway.budget_exceeded", at, workspace, conversationId, turnId, scope, limit, used, reserved, requested: need, resetsAt, message })
    send(res, 429, errorJson(api, "budget_exceeded", message))
    return false
  }

  const admit = (api: Api, res: http.ServerResponse, grant: Grant, need: number): boolean => {
    const t = now()
    const budget = budgets.check(grant.workspace, t, need)
    if (!budget.ok) return refuse(api, res, grant, t, "workspace-daily", need, budget)
    const limit = grant.tokenBudget
    if (limit !== null && (grant.used >= limit || grant.used + grant.reserved + need > limit)) {
      return refuse(api, res, grant, t, "turn", need, { limit, used: grant.used, reserved: grant.reserved, resetsAt: null })
    }
    budgets.reserve(grant.workspace, need)
    grant.reserved += need
    return true
  }

  return { grantOf, overInFlightCap, reservationOf, admit }
}
