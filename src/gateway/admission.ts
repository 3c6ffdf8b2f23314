/**
 * Who may send what: the turn token and its grant, the models it may use, its cap on requests in
 * flight, and the reservation a request holds against the budgets (settled by accounting.ts).
 * Each refusal answers the client itself, so the handler only stops.
 *
 * Once a budget's spend plus what its requests in flight hold reaches the limit, nothing more is
 * admitted against it; so spend can pass a limit only by what the requests already in flight
 * overran their reservations (docs/gateway.md, "Accounting and budgets").
 */
import type * as http from "node:http"
import type { Budgets } from "./budgets.js"
import type { Api } from "./catalog.js"
import type { GatewayConfig } from "../config/gateway.js"
import { reservationOf } from "./estimate.js"
import type { BudgetExceededEvent, GatewayEvent } from "./events.js"
import { errorJson, send, shown } from "./replies.js"
import type { Grant, TokenTable } from "./tokens.js"

const tokenOf = (req: http.IncomingMessage): string | undefined => {
  const auth = req.headers.authorization
  if (typeof auth === "string" && auth.length > 7 && auth.slice(0, 7).toLowerCase() === "bearer ") return auth.slice(7).trim()
  const key = req.headers["x-api-key"]
  return typeof key === "string" && key !== "" ? key.trim() : undefined
}

/** Whether the grant's scope includes a public model name. */
export const mayUse = (grant: Grant, model: string): boolean => grant.models === null || grant.models.has(model)

/** How a refusal names the credential: a turn's token, or one of the user's keys. */
const holder = (grant: Grant) => grant.turnId === null && grant.workspace.startsWith("key:") ? "this key" : "this turn"

/** Seconds until `resetsAt`, at least one: what a budget refusal tells the client to wait. */
export const retryAfterSeconds = (resetsAt: number, now: number): number => Math.max(1, Math.ceil((resetsAt - now) / 1000))

export interface Admission {
  /** The live grant of the request's bearer or x-api-key token. */
  readonly grantOf: (req: http.IncomingMessage) => Grant | undefined
  /** Refuses (403) a model outside the grant's scope; true when it did. */
  readonly forbidsModel: (api: Api, res: http.ServerResponse, grant: Grant, model: string, secrets: ReadonlyArray<string>) => boolean
  /** Refuses (429, drained) a request over the token's in-flight cap; true when it did. */
  readonly overInFlightCap: (api: Api, req: http.IncomingMessage, res: http.ServerResponse, grant: Grant) => boolean
  /** What a request may spend: its output cap or the default, plus its input estimate (estimate.ts). */
  readonly reservationOf: (body: Record<string, unknown>, bytes: number) => number
  /**
   * Reserves `need` against the workspace's (or key's) day and the token's own budget, or refuses
   * with 429: `Retry-After` to the next UTC day for a daily budget (none for a turn's, which never
   * resets) and `x-should-retry: false`, which the OpenAI and Anthropic SDKs obey instead of
   * retrying (they would otherwise sleep out the Retry-After, or back off and retry at once).
   */
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

  const forbidsModel = (api: Api, res: http.ServerResponse, grant: Grant, model: string, secrets: ReadonlyArray<string>): boolean => {
    if (mayUse(grant, model)) return false
    send(res, 403, errorJson(api, "permission_error", `model '${shown(model, secrets)}' is not allowed for ${holder(grant)}`))
    return true
  }

  const overInFlightCap = (api: Api, req: http.IncomingMessage, res: http.ServerResponse, grant: Grant): boolean => {
    if (grant.inFlight.size < inFlightCap) return false
    req.resume()
    send(res, 429, errorJson(api, "rate_limit_error", `this token already has ${inFlightCap} requests in flight, the most it may have; send more when one has finished`), { "retry-after": "1" })
    return true
  }

  const reservation = (body: Record<string, unknown>, bytes: number): number => reservationOf(body, bytes, budgetConfig)

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
      ? [holder(grant), "its token budget"]
      : [workspace.startsWith("key:") ? `key '${workspace.slice(4)}'` : `workspace '${workspace}'`, "its daily token budget"]
    const why = used >= limit
      ? `${who} has used ${budget} (${used} of ${limit} tokens)`
      : `${who} cannot fit this request in ${budget}: it may use up to ${need} tokens (${capWords}), and ${used} of ${limit} are used and ${reserved} held by requests in flight`
    const message = resetsAt === null ? why : `${why}; it resets at ${new Date(resetsAt).toISOString()}`
    emit({ type: "gateway.budget_exceeded", at, workspace, conversationId, turnId, scope, limit, used, reserved, requested: need, resetsAt, message })
    const wait = resetsAt === null ? {} : { "retry-after": String(retryAfterSeconds(resetsAt, at)) }
    send(res, 429, errorJson(api, "budget_exceeded", message), { ...wait, "x-should-retry": "false" })
    return false
  }

  const admit = (api: Api, res: http.ServerResponse, grant: Grant, need: number): boolean => {
    const t = now()
    const budget = budgets.check(grant.workspace, t, need)
    if (!budget.ok) return refuse(api, res, grant, t, "workspace-daily", need, budget)
    const limit = grant.tokenBudget
    if (limit !== null && (grant.used + grant.reserved >= limit || grant.used + grant.reserved + need > limit)) {
      return refuse(api, res, grant, t, "turn", need, { limit, used: grant.used, reserved: grant.reserved, resetsAt: null })
    }
    budgets.reserve(grant.workspace, need)
    grant.reserved += need
    return true
  }

  return { grantOf, forbidsModel, overInFlightCap, reservationOf: reservation, admit }
}
