/**
 * A span per upstream attempt, on the callback data path: made with the host's tracer directly
 * (no fiber), as a child of the turn's trace context the token carries, and sent upstream as the
 * attempt's W3C `traceparent` header. A request made with a gateway key (no turn) is not traced.
 */
import * as Context from "effect/Context"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import type * as Tracer from "effect/Tracer"
import type { Deployment } from "./catalog.js"
import type { Ctx } from "./request.js"
import { traceparentOf } from "../telemetry/trace-context.js"

export interface AttemptSpan {
  /** The header value naming this attempt's span. */
  readonly traceparent: string
  /** Ends the span (once): `status` the upstream's, or a failure code. */
  readonly end: (outcome: { readonly status?: number; readonly failure?: string }) => void
}

export type TraceAttempt = (ctx: Ctx, d: Deployment) => AttemptSpan | undefined

export const makeTraceAttempt = (tracer: Tracer.Tracer, nanos: () => bigint): TraceAttempt => (ctx, d) => {
  const parent = ctx.grant.trace
  if (parent === undefined) return undefined
  const span = tracer.span("gateway.attempt", Option.some(parent), Context.empty(), [], nanos(), "client")
  span.attribute("pynchy.gateway.deployment", d.id)
  span.attribute("pynchy.gateway.model", ctx.model)
  span.attribute("pynchy.gateway.attempt", ctx.tried.size)
  span.attribute("pynchy.gateway.api", ctx.api)
  let ended = false
  return {
    traceparent: traceparentOf(span),
    end: ({ failure, status }) => {
      if (ended) return
      ended = true
      if (status !== undefined) span.attribute("http.response.status_code", status)
      span.end(nanos(), failure === undefined ? Exit.void : Exit.fail(failure))
    }
  }
}
