/**
 * The gateway's data path: a node:http request handler over a pooled keep-alive upstream client.
 * Bytes never enter an Effect stream: measured on this machine kind, the platform HttpServer +
 * HttpClient add ~0.9 ms per request and cap near 1,000 rps, this path ~0.06 ms (docs/gateway.md).
 * This file routes, reads the body and checks it, and composes the pieces: admission (token,
 * scope, connections and in-flight caps, budget reservation), attempts (the first in callbacks, retries in a
 * fiber), upstream (one attempt), relay (the answer or the failure, keys masked) and accounting
 * (the reservation settled once per request: the response's close is the backstop).
 */
import { type Clock, Runtime, type Tracer } from "effect"
import type * as http from "node:http"
import { performance } from "node:perf_hooks"
import { makeAccounting } from "./accounting.js"
import { makeAdmission, mayUse } from "./admission.js"
import { makeAttempts } from "./attempts.js"
import { TokenConnections } from "./connections.js"
import type { Budgets } from "./budgets.js"
import type { Api, Catalog } from "./catalog.js"
import type { GatewayConfig } from "../config/gateway.js"
import type { Deadlines } from "./deadlines.js"
import type { GatewayEvent } from "./events.js"
import { gatewayLog } from "./redact.js"
import { makeRelay } from "./relay.js"
import { errorJson, send, shown } from "./replies.js"
import type { Ctx, Log } from "./request.js"
import type { Router } from "./router.js"
import type { Grant, TokenTable } from "./tokens.js"
import { makeTraceAttempt } from "./trace.js"
import { makeUpstream } from "./upstream.js"

export interface DataPathDeps {
  readonly runtime: Runtime.Runtime<never>
  readonly clock: Clock.Clock
  readonly catalog: Catalog
  readonly router: Router
  readonly tokens: TokenTable
  readonly budgets: Budgets
  readonly config: GatewayConfig
  readonly emit: (event: GatewayEvent) => void
  /** Header timeouts of first attempts (`timeouts.headersMs`). */
  readonly deadlines: Deadlines
  /** The host's tracer: each upstream attempt of a turn is a span in its trace. */
  readonly tracer: Tracer.Tracer
}

export interface DataPath {
  readonly handler: (req: http.IncomingMessage, res: http.ServerResponse) => void
  /** Drops pooled upstream connections. */
  readonly close: () => void
}

/** One request from the moment its token was accepted; `ctx` once it was admitted. */
interface Slot {
  ctx: Ctx | undefined
}

export const makeDataPath = (deps: DataPathDeps): DataPath => {
  const { catalog, router, tokens, budgets, config, clock, emit, deadlines } = deps
  const { timeouts } = config
  const runFork = Runtime.runFork(deps.runtime)
  const secrets = catalog.secrets
  const secretBufs = secrets.map((s) => Buffer.from(s))
  const now = () => clock.unsafeCurrentTimeMillis()
  const log: Log = (level, message, fields) => {
    runFork(gatewayLog(level, message, fields, secrets))
  }

  const admission = makeAdmission(tokens, budgets, config, emit, now)
  const accounting = makeAccounting(budgets, emit, now)
  const upstream = makeUpstream(router, config, now, makeTraceAttempt(deps.tracer, () => clock.unsafeCurrentTimeNanos()))
  const relay = makeRelay({ router, secrets, secretBufs, accounting, log, now })
  const { forward, cut } = makeAttempts({ router, config, deadlines, upstream, relay, accounting, runFork, log, now })
  // Never fewer than the requests a token may have in flight: each of those needs a connection.
  const connectionsPerToken = Math.max(config.limits.connectionsPerToken, config.limits.inFlightPerToken)
  const tokenConnections = new TokenConnections(connectionsPerToken)

  const start = (api: Api, req: http.IncomingMessage, res: http.ServerResponse, grant: Grant, raw: Buffer, received: number, slot: Slot) => {
    let parsed: unknown
    try {
      parsed = JSON.parse(raw.toString("utf8"))
    } catch {
      return send(res, 400, errorJson(api, "invalid_request_error", "the request body is not valid JSON"))
    }
    if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
      return send(res, 400, errorJson(api, "invalid_request_error", "the request body must be a JSON object"))
    }
    const body = parsed as Record<string, unknown>
    const model = body.model
    if (typeof model !== "string" || model === "") return send(res, 400, errorJson(api, "invalid_request_error", "the request body needs a string 'model'"))
    if (admission.forbidsModel(api, res, grant, model, secrets)) return
    const chain = router.chain(model)
    if (chain === undefined) return send(res, 404, errorJson(api, "not_found_error", `model '${shown(model, secrets)}' is not served by this gateway`))
    if (!router.servesApi(chain, api)) {
      return send(res, 400, errorJson(api, "invalid_request_error", `no deployment of model '${shown(model, secrets)}' serves ${req.url?.split("?")[0]}`))
    }
    const stream = body.stream === true
    let rewritten = false
    // Streamed chat answers carry usage only when asked: ask, so streams are accounted too.
    if (api === "chat" && stream) {
      const opts = body.stream_options
      if (opts === null || typeof opts !== "object" || (opts as Record<string, unknown>).include_usage !== true) {
        body.stream_options = { ...(opts !== null && typeof opts === "object" ? opts : {}), include_usage: true }
        rewritten = true
      }
    }
    const need = admission.reservationOf(body, raw.length)
    if (!admission.admit(api, res, grant, need)) return
    const ctx: Ctx = {
      api, req, res, grant, model, chain, stream, parsed: body, raw, rewritten, tried: new Set(), attempts: 0, received,
      reserved: need, accounted: false, charged: 0, live: false, cut: undefined, upReq: undefined, bodies: undefined, fiber: undefined
    }
    slot.ctx = ctx
    forward(ctx)
  }

  const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
    const received = performance.now()
    const url = req.url ?? "/"
    const q = url.indexOf("?")
    const path = q === -1 ? url : url.slice(0, q)
    let api: Api | "models" | undefined
    if (req.method === "POST") api = path === "/v1/chat/completions" ? "chat" : path === "/v1/messages" ? "messages" : path === "/v1/responses" ? "responses" : undefined
    else if (req.method === "GET" && path === "/v1/models") api = "models"
    else if (req.method === "HEAD" && path === "/") {
      // Claude Code probes its base URL before the first request: answered without a token, holding nothing.
      req.resume()
      res.writeHead(200, { "content-length": 0 })
      return res.end()
    } else if (req.method === "GET" && path === "/health") {
      req.resume()
      return send(res, 200, "{\"status\":\"ok\"}")
    }
    if (api === undefined) {
      req.resume()
      return send(res, 404, errorJson("models", "not_found_error", "no such endpoint"))
    }
    const grant = admission.grantOf(req)
    if (grant === undefined) {
      req.resume()
      return send(res, 401, errorJson(api, "authentication_error", "unauthorized"))
    }
    if (!tokenConnections.attach(grant, req.socket)) {
      req.resume()
      res.shouldKeepAlive = false
      return send(res, 429, errorJson(api, "rate_limit_error", `this token already holds ${connectionsPerToken} connections to the gateway, the most it may; reuse one of them`), { "retry-after": "1" })
    }
    if (api === "models") {
      req.resume()
      const names = [...catalog.groups.keys()].filter((n) => mayUse(grant, n))
      return send(res, 200, JSON.stringify({ object: "list", data: names.map((id) => ({ id, object: "model", created: 0, owned_by: "pynchy" })) }))
    }
    // Counted from here, so slow uploads hold their slots too.
    if (admission.overInFlightCap(api, req, res, grant)) return
    const slot: Slot = { ctx: undefined }
    const cancel = () => {
      if (slot.ctx) cut(slot.ctx)
      res.destroy()
    }
    const inFlightSlot = grant.inFlight.add(cancel)
    res.on("close", () => {
      grant.inFlight.delete(inFlightSlot, cancel)
      const ctx = slot.ctx
      if (ctx === undefined) return
      if (!res.writableFinished) cut(ctx)
      // The backstop: a path that never settled (a retry fiber interrupted, an attempt cut) still
      // releases its reservation. Deferred, so the relay's own close listeners settle first
      // with the usage they read.
      if (!ctx.accounted) {
        setImmediate(() => {
          if (!ctx.accounted) accounting.accountClosed(ctx, "none")
        })
      }
    })
    const chunks: Array<Buffer> = []
    let size = 0
    let tooBig = false
    req.on("data", (c: Buffer) => {
      if (tooBig) return
      size += c.length
      if (size > timeouts.maxBodyBytes) {
        tooBig = true
        chunks.length = 0
        return
      }
      chunks.push(c)
    })
    req.on("end", () => {
      if (tooBig) return send(res, 413, errorJson(api, "request_too_large", `the request body is larger than ${timeouts.maxBodyBytes} bytes`))
      start(api, req, res, grant, chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size), received, slot)
    })
    req.on("error", () => res.destroy())
  }

  return { handler, close: upstream.close }
}
