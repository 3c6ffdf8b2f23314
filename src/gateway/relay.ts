/**
 * What goes back to the client once the attempts are decided: the chosen answer piped chunk by
 * chunk (never buffered; JSON answers are copied aside only to read their usage), or the final
 * failure. Provider keys are masked in both, including a key the upstream splits across chunks.
 */
import type * as http from "node:http"
import type { Accounting } from "./accounting.js"
import { maskTruncated, REDACTED, redactText, StreamMasker } from "./redact.js"
import { errorJson, send, shown, streamErrorEvent } from "./replies.js"
import type { Ctx, Log, Outcome } from "./request.js"
import type { Router } from "./router.js"
import { type AttemptFailed, type Answer, MAX_ERROR_BODY } from "./upstream.js"
import { SseUsageTap, type Usage, usageOfJson } from "./usage.js"

const MAX_USAGE_BODY = 8 * 1024 * 1024
const hopByHop = new Set(["connection", "keep-alive", "transfer-encoding", "upgrade", "proxy-connection", "te", "trailer", "set-cookie", "server", "date"])

export interface Relay {
  /** Pipes the chosen answer to the client chunk by chunk; usage is read on the way. */
  readonly pipe: (ctx: Ctx, a: Answer) => void
  /** Answers the client with the attempt that failed last (its masked error body, or the gateway's own). */
  readonly fail: (ctx: Ctx, f: AttemptFailed) => void
}

export interface RelayDeps {
  readonly router: Router
  /** Provider keys, as text and as bytes. */
  readonly secrets: ReadonlyArray<string>
  readonly secretBufs: ReadonlyArray<Buffer>
  readonly accounting: Accounting
  readonly log: Log
  readonly now: () => number
}

export const makeRelay = ({ accounting: { account }, log, now, router, secretBufs, secrets }: RelayDeps): Relay => {
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
    const finish = (outcome: Outcome) => {
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
      send(res, 504, errorJson(api, "timeout", f.deployment === undefined ? "the upstream did not answer in time" : `provider ${f.deployment.provider} did not answer in time (${f.deployment.hostname})`))
    } else if (f.kind === "connect") {
      // The cause in words (never a key): which provider, what failed, which host.
      const d = f.deployment
      send(res, 502, errorJson(api, "upstream_error", d === undefined
        ? "the upstream could not be reached"
        : `provider ${d.provider} unreachable: ${f.code ?? "connection failed"} ${d.hostname}`))
    } else {
      const wait = router.waitFor(ctx.chain, api, now())
      send(res, 503, errorJson(api, "overloaded_error", `no deployment of model '${shown(ctx.model, secrets)}' is available now (cooling down or at its rate limit)`),
        Number.isFinite(wait) ? { "retry-after": String(Math.max(1, Math.ceil(wait / 1000))) } : undefined)
    }
    account(ctx, f.deployment?.id ?? "none", f.status, "upstream_error", null)
  }

  return { pipe, fail }
}
