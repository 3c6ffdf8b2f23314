/**
 * The gateway's data path: a node:http request handler and a pooled keep-alive upstream client.
 * Bytes never enter an Effect stream: measured on this machine kind, the platform HttpServer +
 * HttpClient add ~0.9 ms per request and cap near 1,000 rps, this path ~0.06 ms (docs/gateway.md).
 * Effect runs the control flow around the bytes: one fiber per request does the attempts, the
 * retry Schedule (backoff, Retry-After, failover) and the header timeout; answers are then piped
 * chunk by chunk, never buffered (JSON answers are copied aside only to read their usage).
 * Admission reserves what a request may spend against the budgets and its end settles it
 * (`account`, once per request: the response's close is the backstop).
 */
import { Clock, Duration, Effect, type Fiber, FiberId, Option, Redacted, Runtime, Schedule } from "effect"
import * as http from "node:http"
import * as https from "node:https"
import { performance } from "node:perf_hooks"
import type { Budgets } from "./budgets.js"
import type { Deadline, Deadlines } from "./deadlines.js"
import type { Api, Catalog, Deployment, Group } from "./catalog.js"
import type { GatewayConfig } from "./config.js"
import type { GatewayEvent } from "./events.js"
import { gatewayLog, maskTruncated, REDACTED, redactText, StreamMasker } from "./redact.js"
import type { Router } from "./router.js"
import type { Grant, TokenTable } from "./tokens.js"
import { SseUsageTap, type Usage, usageOfJson } from "./usage.js"

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
}

export interface DataPath {
  readonly handler: (req: http.IncomingMessage, res: http.ServerResponse) => void
  /** Drops pooled upstream connections. */
  readonly close: () => void
}

const apiPaths: Record<Api, string> = { chat: "/chat/completions", responses: "/responses", messages: "/messages" }
const MAX_USAGE_BODY = 8 * 1024 * 1024
const MAX_ERROR_BODY = 64 * 1024
/** Output cap fields, across the three APIs; the largest one set is reserved. */
const capFields = ["max_tokens", "max_completion_tokens", "max_output_tokens"] as const
const MAX_RESERVATION = 2 ** 48

/** One request from the moment its token was accepted; `ctx` once it was admitted. */
interface Slot {
  ctx: Ctx | undefined
}

/** Statuses worth another attempt (elsewhere, or later): overload, server faults, a key this deployment refuses. */
const retryableStatus = (s: number) => s === 401 || s === 403 || s === 408 || s === 409 || s === 425 || s === 429 || s >= 500

const forwardedRequestHeaders = ["content-type", "accept", "anthropic-version", "anthropic-beta", "openai-beta", "user-agent"]
const hopByHop = new Set(["connection", "keep-alive", "transfer-encoding", "upgrade", "proxy-connection", "te", "trailer", "set-cookie", "server", "date"])

/** One failed attempt, as the retry Schedule sees it. */
class AttemptFailed {
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
}

interface Answer {
  readonly d: Deployment
  readonly upReq: http.ClientRequest
  readonly upRes: http.IncomingMessage
  readonly release: () => void
}

interface Ctx {
  readonly api: Api
  readonly req: http.IncomingMessage
  readonly res: http.ServerResponse
  readonly grant: Grant
  readonly model: string
  readonly chain: ReadonlyArray<Group>
  readonly stream: boolean
  readonly parsed: Record<string, unknown>
  readonly raw: Buffer
  readonly rewritten: boolean
  readonly tried: Set<string>
  readonly received: number
  /** Tokens held against the budgets until `account` settles them. */
  readonly reserved: number
  accounted: boolean
  /** Tokens charged so far (by `account`). */
  charged: number
  /** An attempt is with the upstream (it may be spending tokens). */
  live: boolean
  /** Set when the client left or the token was revoked: whether an attempt was live then. */
  cut: boolean | undefined
  upReq: http.ClientRequest | undefined
  bodies: Map<string, Buffer> | undefined
  /** The retry fiber, once a first attempt failed. */
  fiber: Fiber.RuntimeFiber<void> | undefined
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

const tokenOf = (req: http.IncomingMessage): string | undefined => {
  const auth = req.headers.authorization
  if (typeof auth === "string" && auth.length > 7 && auth.slice(0, 7).toLowerCase() === "bearer ") return auth.slice(7).trim()
  const key = req.headers["x-api-key"]
  return typeof key === "string" && key !== "" ? key.trim() : undefined
}

/** An error body in the dialect of the endpoint asked (Anthropic or OpenAI). */
const errorJson = (api: Api | "models", type: string, message: string): string =>
  api === "messages"
    ? JSON.stringify({ type: "error", error: { type, message } })
    : JSON.stringify({ error: { message, type, code: type } })

const send = (res: http.ServerResponse, status: number, body: string, extra?: Record<string, string>) => {
  if (res.headersSent) {
    res.destroy()
    return
  }
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body), ...extra })
  res.end(body)
}

/** The SSE event that ends a stream the upstream broke after bytes reached the client. */
const streamErrorEvent = (api: Api): string =>
  api === "messages"
    ? `event: error\ndata: ${JSON.stringify({ type: "error", error: { type: "api_error", message: "the upstream connection failed mid-stream" } })}\n\n`
    : `data: ${JSON.stringify({ error: { message: "the upstream connection failed mid-stream", type: "upstream_error", code: "stream_interrupted" } })}\n\n`

/** Names the client sent, shown back safely. */
const shown = (s: string, known: ReadonlyArray<string>) => redactText(s.length > 120 ? `${s.slice(0, 120)}...` : s, known)

export const makeDataPath = (deps: DataPathDeps): DataPath => {
  const { catalog, router, tokens, budgets, config, clock, emit, deadlines } = deps
  const budgetConfig = config.budgets
  const inFlightCap = config.limits.inFlightPerToken
  const capWords = `its max_tokens, or ${budgetConfig.defaultMaxTokens} when it sets none, plus an estimate of its input`
  const runFork = Runtime.runFork(deps.runtime)
  const secrets = catalog.secrets
  const secretBufs = secrets.map((s) => Buffer.from(s))
  const agentOptions = { keepAlive: true, maxSockets: 512, maxFreeSockets: 512, scheduling: "lifo" as const, timeout: config.timeouts.idleMs }
  const httpAgent = new http.Agent(agentOptions)
  const httpsAgent = new https.Agent(agentOptions)
  const now = () => clock.unsafeCurrentTimeMillis()
  const { retry, timeouts } = config
  const log = (level: "Warning" | "Info", message: string, fields: Record<string, unknown>) => {
    runFork(gatewayLog(level, message, fields, secrets))
  }

  const upstreamHeaders = (ctx: Ctx, d: Deployment, length: number): http.OutgoingHttpHeaders => {
    const h: http.OutgoingHttpHeaders = { "content-length": length, host: d.port === 80 || d.port === 443 ? d.hostname : `${d.hostname}:${d.port}` }
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

  const bodyFor = (ctx: Ctx, d: Deployment): Buffer => {
    if (!ctx.rewritten && d.model === ctx.model) return ctx.raw
    const cached = ctx.bodies?.get(d.model)
    if (cached) return cached
    const body = Buffer.from(JSON.stringify({ ...ctx.parsed, model: d.model }))
    ;(ctx.bodies ??= new Map()).set(d.model, body)
    return body
  }

  /**
   * One upstream attempt, in callbacks: `done` gets the answer at its response headers (2xx, or
   * a non-retryable status to pass through) or the failure. Returns a cancel.
   */
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
    const started = performance.now()
    const upReq = (d.protocol === "https:" ? https : http).request({
      agent: d.protocol === "https:" ? httpsAgent : httpAgent,
      hostname: d.hostname,
      port: d.port,
      method: "POST",
      path: d.basePath + apiPaths[ctx.api],
      headers: upstreamHeaders(ctx, d, body.length)
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
    }
  }

  const timedOut = (d: Deployment) => new AttemptFailed("timeout", d, 504, undefined, undefined, undefined, "headers_timeout")

  /** Bookkeeping of every failed attempt, on either path. */
  const failed = (f: AttemptFailed) => {
    if (f.deployment) router.onFailure(f.deployment, now(), f.retryAfterMs)
    log("Warning", "upstream attempt failed", { deployment: f.deployment?.id ?? null, kind: f.kind, status: f.status, code: f.code ?? null })
  }

  const nextAttempt = (ctx: Ctx): Effect.Effect<Answer, AttemptFailed> =>
    Effect.suspend(() => {
      const d = router.pick(ctx.chain, ctx.api, ctx.tried, now())
      if (d === undefined) return Effect.fail(new AttemptFailed("unavailable", undefined, 503, undefined, undefined, undefined, undefined))
      ctx.tried.add(d.id)
      return Effect.async<Answer, AttemptFailed>((resume) => {
        const cancel = exchange(ctx, d, (r) => resume(r instanceof AttemptFailed ? Effect.fail(r) : Effect.succeed(r)))
        return Effect.sync(cancel)
      }).pipe(
        Effect.timeoutFail({ duration: Duration.millis(timeouts.headersMs), onTimeout: () => timedOut(d) }),
        Effect.tapError((f) => Effect.sync(() => failed(f)))
      )
    })

  /** Retries go elsewhere at once when an untried deployment is free; otherwise back off, at least until one is. */
  const policy = (ctx: Ctx) =>
    Schedule.exponential(Duration.millis(Math.max(1, retry.baseMs))).pipe(
      Schedule.jittered,
      Schedule.intersect(Schedule.recurs(retry.attempts - 1)),
      Schedule.whileInput((f: AttemptFailed) => {
        if (!f.retryable || ctx.res.destroyed) return false
        const t = now()
        return router.hasFresh(ctx.chain, ctx.api, ctx.tried, t) || router.waitFor(ctx.chain, ctx.api, t) <= retry.maxWaitMs
      }),
      Schedule.modifyDelay((_, delay) => {
        const t = now()
        if (router.hasFresh(ctx.chain, ctx.api, ctx.tried, t)) return Duration.zero
        return Duration.millis(Math.max(Math.min(Duration.toMillis(delay), retry.maxDelayMs), router.waitFor(ctx.chain, ctx.api, t)))
      })
    )

  /** After a failed first attempt: the retry Schedule decides the rest, in a fiber. */
  const retryAfter = (ctx: Ctx, first: AttemptFailed) => {
    let firstSeen = false
    const attempts = Effect.suspend(() => {
      if (firstSeen) return nextAttempt(ctx)
      firstSeen = true
      return Effect.fail(first)
    })
    ctx.fiber = runFork(
      attempts.pipe(
        Effect.retry(policy(ctx)),
        Effect.match({ onFailure: (f) => fail(ctx, f), onSuccess: (a) => pipe(ctx, a) })
      )
    )
  }

  /**
   * The first attempt runs in plain callbacks (most requests need no other), with its header
   * timeout on the shared deadline queue; only a failure starts a fiber.
   */
  const forward = (ctx: Ctx) => {
    const d = router.pick(ctx.chain, ctx.api, ctx.tried, now())
    if (d === undefined) return retryAfter(ctx, new AttemptFailed("unavailable", undefined, 503, undefined, undefined, undefined, undefined))
    ctx.tried.add(d.id)
    let deadline: Deadline | undefined = undefined
    const cancel = exchange(ctx, d, (r) => {
      deadline?.clear()
      // The client left (its close cut the upstream request): not the deployment's failure.
      if (ctx.res.destroyed) {
        if (!(r instanceof AttemptFailed)) {
          r.upReq.destroy()
          r.release()
        }
        return account(ctx, d.id, 499, "client_closed", null, ctx.cut === true)
      }
      if (r instanceof AttemptFailed) {
        failed(r)
        if (r.retryable) retryAfter(ctx, r)
        else fail(ctx, r)
      } else pipe(ctx, r)
    })
    deadline = deadlines.add(() => {
      cancel()
      if (ctx.res.destroyed) return
      const f = timedOut(d)
      failed(f)
      retryAfter(ctx, f)
    })
  }

  /** The client left or the token was revoked: stop whatever attempt or retry is running. */
  const cut = (ctx: Ctx) => {
    if (ctx.cut === undefined) ctx.cut = ctx.live
    ctx.fiber?.unsafeInterruptAsFork(FiberId.none)
    ctx.upReq?.destroy()
  }

  const fail = (ctx: Ctx, f: AttemptFailed) => {
    const { res, api } = ctx
    if (f.kind === "status" && f.body !== undefined) {
      const body = Buffer.from(redactText(maskTruncated(f.body, MAX_ERROR_BODY, secretBufs).toString("utf8"), secrets))
      const headers: Record<string, string> = { "content-type": redactText(String(f.headers?.["content-type"] ?? "application/json"), secrets) }
      if (f.retryAfterMs !== undefined) headers["retry-after"] = String(Math.ceil(f.retryAfterMs / 1000))
      if (!res.headersSent) {
        res.writeHead(f.status, { ...headers, "content-length": body.length })
        res.end(body)
      }
    } else if (f.kind === "timeout") {
      send(res, 504, errorJson(api, "timeout", "the upstream did not answer in time"))
    } else if (f.kind === "connect") {
      send(res, 502, errorJson(api, "upstream_error", "the upstream could not be reached"))
    } else {
      const wait = router.waitFor(ctx.chain, api, now())
      send(res, 503, errorJson(api, "overloaded_error", `no deployment of model '${shown(ctx.model, secrets)}' is available now (cooling down or at its rate limit)`),
        Number.isFinite(wait) ? { "retry-after": String(Math.max(1, Math.ceil(wait / 1000))) } : undefined)
    }
    account(ctx, f.deployment?.id ?? "none", f.status, "upstream_error", null)
  }

  /**
   * Settles the request: its reservation is released and what it spent is charged. `unread`: the
   * upstream may have spent tokens whose usage never came (an answer without usage, or one cut
   * before it), so at least the reservation is charged; otherwise cutting a stream just before
   * its usage would make output free. A later call (a straggler after the backstop) charges only
   * what exceeds the first charge.
   */
  const account = (ctx: Ctx, deployment: string, status: number, outcome: "ok" | "upstream_error" | "dropped" | "client_closed", usage: Usage | null, unread = false) => {
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
      durationMs: Math.round((performance.now() - ctx.received) * 1000) / 1000
    })
  }

  /** Pipes the chosen answer to the client chunk by chunk; usage is read on the way. */
  const pipe = (ctx: Ctx, a: Answer) => {
    const { res, api } = ctx
    const { d, upRes, upReq } = a
    const status = upRes.statusCode ?? 502
    if (status < 400) router.onSuccess(d)
    const headers: http.OutgoingHttpHeaders = { "x-pynchy-deployment": d.id }
    for (const [name, value] of Object.entries(upRes.headers)) {
      if (value === undefined || hopByHop.has(name)) continue
      headers[name] = secrets.length > 0 && secrets.some((k) => String(value).includes(k)) ? REDACTED : value
    }
    const sse = String(upRes.headers["content-type"] ?? "").startsWith("text/event-stream")
    res.writeHead(status, headers)
    if (sse) res.flushHeaders()
    const tap = sse ? new SseUsageTap() : undefined
    const masker = secretBufs.length > 0 ? new StreamMasker(secretBufs) : undefined
    const copies: Array<Buffer> = []
    let copied = 0
    let done = false
    const finish = (outcome: "ok" | "upstream_error" | "dropped" | "client_closed") => {
      if (done) return
      done = true
      a.release()
      let usage: Usage | null = null
      if (tap) usage = tap.result()
      else if (copied > 0 && copied <= MAX_USAGE_BODY) usage = usageOfJson(Buffer.concat(copies, copied).toString("utf8"))
      router.onTokens(d, usage?.totalTokens ?? 0, now())
      account(ctx, d.id, status, outcome, usage, status < 400 && (outcome !== "ok" || usage === null))
    }
    const forward = (chunk: Buffer) => {
      if (tap) tap.push(chunk)
      else if (copied + chunk.length <= MAX_USAGE_BODY) {
        copies.push(chunk)
        copied += chunk.length
      }
    }
    upRes.on("data", (chunk: Buffer) => {
      const out = masker ? masker.push(chunk) : chunk
      if (out.length === 0) return
      forward(out)
      if (!res.write(out)) upRes.pause()
    })
    res.on("drain", () => upRes.resume())
    upRes.on("end", () => {
      const rest = masker?.end()
      if (rest) forward(rest)
      res.end(rest)
      finish(status < 400 ? "ok" : "upstream_error")
    })
    upRes.on("error", () => undefined)
    upRes.on("close", () => {
      if (done || upRes.complete) return
      if (res.destroyed) return finish("client_closed")
      // Bytes may already be with the client: no retry is possible, end the stream with an error event.
      router.onFailure(d, now(), undefined)
      log("Warning", "upstream failed mid-answer", { deployment: d.id, api })
      if (sse) res.end(streamErrorEvent(api))
      else res.destroy()
      finish("dropped")
    })
    res.on("close", () => {
      if (!done && !res.writableFinished) {
        upReq.destroy()
        finish("client_closed")
      }
    })
  }

  /**
   * What a request may spend: its output cap (the largest it sets, times `n` choices) or the
   * configured default, plus an input estimate from the body's size.
   */
  const reservationOf = (body: Record<string, unknown>, bytes: number): number => {
    let cap = 0
    for (const field of capFields) {
      const v = body[field]
      if (typeof v === "number" && Number.isFinite(v) && v > cap) cap = Math.ceil(v)
    }
    const n = typeof body.n === "number" && Number.isInteger(body.n) && body.n > 1 ? body.n : 1
    return Math.min(MAX_RESERVATION, (cap > 0 ? cap : budgetConfig.defaultMaxTokens) * n + Math.ceil(bytes / budgetConfig.inputBytesPerToken))
  }

  /** Reserves `need` against the workspace's day and the token's own budget, or refuses with 429. */
  const admit = (api: Api, res: http.ServerResponse, grant: Grant, need: number): boolean => {
    const t = now()
    const { workspace, conversationId } = grant
    const budget = budgets.check(workspace, t, need)
    if (!budget.ok) {
      const { limit, used, reserved, resetsAt } = budget
      const why = used >= limit
        ? `workspace '${workspace}' has used its daily token budget (${used} of ${limit} tokens)`
        : `workspace '${workspace}' cannot fit this request in its daily token budget: it may use up to ${need} tokens (${capWords}), and ${used} of ${limit} are used and ${reserved} held by requests in flight`
      const message = `${why}; it resets at ${new Date(resetsAt).toISOString()}`
      emit({ type: "gateway.budget_exceeded", at: t, workspace, conversationId, scope: "workspace-daily", limit, used, reserved, requested: need, resetsAt, message })
      send(res, 429, errorJson(api, "budget_exceeded", message))
      return false
    }
    const limit = grant.tokenBudget
    if (limit !== null && (grant.used >= limit || grant.used + grant.reserved + need > limit)) {
      const { used, reserved } = grant
      const message = used >= limit
        ? `this turn has used its token budget (${used} of ${limit} tokens)`
        : `this turn cannot fit this request in its token budget: it may use up to ${need} tokens (${capWords}), and ${used} of ${limit} are used and ${reserved} held by requests in flight`
      emit({ type: "gateway.budget_exceeded", at: t, workspace, conversationId, scope: "turn", limit, used, reserved, requested: need, resetsAt: null, message })
      send(res, 429, errorJson(api, "budget_exceeded", message))
      return false
    }
    budgets.reserve(workspace, need)
    grant.reserved += need
    return true
  }

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
    if (grant.models !== null && !grant.models.has(model)) {
      return send(res, 403, errorJson(api, "permission_error", `model '${shown(model, secrets)}' is not allowed for this turn`))
    }
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
    const need = reservationOf(body, raw.length)
    if (!admit(api, res, grant, need)) return
    const ctx: Ctx = {
      api, req, res, grant, model, chain, stream, parsed: body, raw, rewritten, tried: new Set(), received,
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
    else if (req.method === "GET" && path === "/health") {
      req.resume()
      return send(res, 200, "{\"status\":\"ok\"}")
    }
    if (api === undefined) {
      req.resume()
      return send(res, 404, errorJson("models", "not_found_error", "no such endpoint"))
    }
    const token = tokenOf(req)
    const grant = token === undefined ? undefined : tokens.lookup(token, now())
    if (grant === undefined) {
      req.resume()
      return send(res, 401, errorJson(api, "authentication_error", "unauthorized"))
    }
    if (api === "models") {
      req.resume()
      const names = [...catalog.groups.keys()].filter((n) => grant.models === null || grant.models.has(n))
      return send(res, 200, JSON.stringify({ object: "list", data: names.map((id) => ({ id, object: "model", created: 0, owned_by: "pynchy" })) }))
    }
    // Counted from here, so slow uploads hold their slots too.
    if (grant.inFlight.size >= inFlightCap) {
      req.resume()
      return send(res, 429, errorJson(api, "rate_limit_error", `this token already has ${inFlightCap} requests in flight, the most it may have; send more when one has finished`), { "retry-after": "1" })
    }
    const slot: Slot = { ctx: undefined }
    const cancel = () => {
      if (slot.ctx) cut(slot.ctx)
      res.destroy()
    }
    grant.inFlight.add(cancel)
    res.on("close", () => {
      grant.inFlight.delete(cancel)
      const ctx = slot.ctx
      if (ctx === undefined) return
      if (!res.writableFinished) cut(ctx)
      // The backstop: a path that never settled (a retry fiber interrupted, an attempt cut) still
      // releases its reservation. Deferred, so the data path's own close listeners settle first
      // with the usage they read.
      if (!ctx.accounted) {
        setImmediate(() => {
          if (!ctx.accounted) account(ctx, "none", 499, "client_closed", null, ctx.cut === true)
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

  return {
    handler,
    close: () => {
      httpAgent.destroy()
      httpsAgent.destroy()
    }
  }
}
