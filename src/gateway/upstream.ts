/**
 * One attempt at an upstream deployment, in plain callbacks on a pooled keep-alive agent: the
 * request body for that deployment, its headers and key, and the outcome at the response's
 * headers (an answer to relay, or a failure for the attempt loop to judge).
 */
import { Option, Redacted } from "effect"
import * as http from "node:http"
import * as https from "node:https"
import { performance } from "node:perf_hooks"
import type { Api, Deployment } from "./catalog.js"
import type { GatewayConfig } from "../config/gateway.js"
import type { Ctx } from "./request.js"
import type { Router } from "./router.js"
import type { TraceAttempt } from "./trace.js"

/** Error bodies are read (and passed on) up to this size. */
export const MAX_ERROR_BODY = 64 * 1024

const apiPaths: Record<Api, string> = { chat: "/chat/completions", responses: "/responses", messages: "/messages" }

const forwardedRequestHeaders = ["content-type", "accept", "anthropic-version", "anthropic-beta", "openai-beta", "user-agent"]

/** Statuses worth another attempt (elsewhere, or later): overload, server faults, a key this deployment refuses. */
const retryableStatus = (s: number) => s === 401 || s === 403 || s === 408 || s === 409 || s === 425 || s === 429 || s >= 500

/** One failed attempt, as the retry Schedule sees it. */
export class AttemptFailed {
  readonly _tag = "AttemptFailed"
  constructor(
    readonly kind: "status" | "connect" | "timeout" | "unavailable",
    readonly deployment: Deployment | undefined,
    readonly status: number,
    readonly retryAfterMs: number | undefined,
    readonly body: Buffer | undefined,
    readonly headers: http.IncomingHttpHeaders | undefined,
    readonly code: string | undefined
  ) {}
  get retryable(): boolean {
    return this.kind !== "status" || retryableStatus(this.status)
  }
  /** No deployment of the chain can take the request now. */
  static unavailable(): AttemptFailed {
    return new AttemptFailed("unavailable", undefined, 503, undefined, undefined, undefined, undefined)
  }
  /** No response headers within `timeouts.headersMs`. */
  static timedOut(d: Deployment): AttemptFailed {
    return new AttemptFailed("timeout", d, 504, undefined, undefined, undefined, "headers_timeout")
  }
}

/** A response to pass on, from its headers; `release` ends the deployment's in-flight count. */
export interface Answer {
  readonly d: Deployment
  readonly upReq: http.ClientRequest
  readonly upRes: http.IncomingMessage
  readonly release: () => void
}

const parseRetryAfter = (headers: http.IncomingHttpHeaders, now: number): number | undefined => {
  const ms = headers["retry-after-ms"]
  if (typeof ms === "string" && /^\d+(\.\d+)?$/.test(ms.trim())) return Math.ceil(Number(ms))
  const v = headers["retry-after"]
  if (typeof v !== "string" || v.trim() === "") return undefined
  if (/^\d+(\.\d+)?$/.test(v.trim())) return Math.ceil(Number(v) * 1000)
  const at = Date.parse(v)
  return Number.isNaN(at) ? undefined : Math.max(0, at - now)
}

const upstreamHeaders = (ctx: Ctx, d: Deployment, length: number, traceparent: string | undefined): http.OutgoingHttpHeaders => {
  const h: http.OutgoingHttpHeaders = { "content-length": length, host: d.port === 80 || d.port === 443 ? d.hostname : `${d.hostname}:${d.port}` }
  if (traceparent !== undefined) h.traceparent = traceparent
  for (const name of forwardedRequestHeaders) {
    const v = ctx.req.headers[name]
    if (v !== undefined) h[name] = v
  }
  if (h["content-type"] === undefined) h["content-type"] = "application/json"
  if (Option.isSome(d.key)) {
    const key = Redacted.value(d.key.value)
    // Anthropic's native API authenticates with x-api-key; its OpenAI-compatible routes take a bearer.
    if (d.kind === "anthropic" && ctx.api === "messages") h["x-api-key"] = key
    else h.authorization = `Bearer ${key}`
  }
  if (d.kind === "anthropic" && ctx.api === "messages" && h["anthropic-version"] === undefined) h["anthropic-version"] = "2023-06-01"
  return h
}

/** The client's bytes as sent when the deployment knows the model by the same name; else rewritten once per model. */
const bodyFor = (ctx: Ctx, d: Deployment): Buffer => {
  if (!ctx.rewritten && d.model === ctx.model) return ctx.raw
  const cached = ctx.bodies?.get(d.model)
  if (cached) return cached
  const body = Buffer.from(JSON.stringify({ ...ctx.parsed, model: d.model }))
  ;(ctx.bodies ??= new Map()).set(d.model, body)
  return body
}

export interface Upstream {
  /**
   * One upstream attempt, in callbacks: `done` gets the answer at its response headers (2xx, or
   * a non-retryable status to pass through) or the failure. Returns a cancel.
   */
  readonly exchange: (ctx: Ctx, d: Deployment, done: (r: Answer | AttemptFailed) => void) => () => void
  /** Drops pooled upstream connections. */
  readonly close: () => void
}

export const makeUpstream = (router: Router, config: GatewayConfig, now: () => number, trace: TraceAttempt): Upstream => {
  const agentOptions = { keepAlive: true, maxSockets: 512, maxFreeSockets: 512, scheduling: "lifo" as const, timeout: config.timeouts.idleMs }
  const httpAgent = new http.Agent(agentOptions)
  const httpsAgent = new https.Agent(agentOptions)

  const exchange = (ctx: Ctx, d: Deployment, done: (r: Answer | AttemptFailed) => void): (() => void) => {
    const body = bodyFor(ctx, d)
    let released = false
    const release = () => {
      if (!released) {
        released = true
        router.onEnd(d)
      }
    }
    router.onStart(d, now())
    const span = trace(ctx, d)
    const started = performance.now()
    const upReq = (d.protocol === "https:" ? https : http).request({
      agent: d.protocol === "https:" ? httpsAgent : httpAgent,
      hostname: d.hostname,
      port: d.port,
      method: "POST",
      path: d.basePath + apiPaths[ctx.api],
      headers: upstreamHeaders(ctx, d, body.length, span?.traceparent)
    })
    ctx.upReq = upReq
    ctx.live = true
    let settled = false
    const settle = (r: Answer | AttemptFailed) => {
      if (settled) return
      settled = true
      if (r instanceof AttemptFailed) {
        ctx.live = false
        release()
        span?.end({ status: r.status, failure: r.code ?? r.kind })
      } else if (span !== undefined) {
        // An answer's span lasts until its last byte (or its cut).
        r.upRes.once("close", () => span.end({ status: r.upRes.statusCode ?? 0 }))
      }
      done(r)
    }
    upReq.on("error", (e: NodeJS.ErrnoException) => settle(new AttemptFailed("connect", d, 502, undefined, undefined, undefined, e.code ?? "error")))
    // The agent's socket timeout (idleMs): silence on an open exchange ends it.
    upReq.on("timeout", () => upReq.destroy())
    upReq.on("response", (upRes) => {
      router.onHeaders(d, performance.now() - started)
      const status = upRes.statusCode ?? 502
      if (status < 400 || !retryableStatus(status)) return settle({ d, upReq, upRes, release })
      // A retryable status: read its (small) error body whole, so a final failure can pass it on masked.
      const chunks: Array<Buffer> = []
      let size = 0
      upRes.on("data", (c: Buffer) => {
        if (size < MAX_ERROR_BODY) chunks.push(c)
        size += c.length
      })
      const end = () =>
        settle(new AttemptFailed("status", d, status, parseRetryAfter(upRes.headers, now()), Buffer.concat(chunks), upRes.headers, undefined))
      upRes.on("end", end)
      upRes.on("close", end)
      upRes.on("error", () => undefined)
    })
    upReq.end(body)
    return () => {
      if (settled) return
      settled = true
      upReq.destroy()
      release()
      span?.end({ failure: "cancelled" })
    }
  }

  return {
    exchange,
    close: () => {
      httpAgent.destroy()
      httpsAgent.destroy()
    }
  }
}
