/**
 * The HTTP API connection: a loopback server that ingests posted messages durably and serves the
 * replies of each conversation (a list and an SSE stream). It is a connection runtime (it
 * ingests) that binds the outbound channel of its connection while it runs.
 *
 *   POST /v1/conversations/{place}/messages   {text, sender?}   Idempotency-Key: <key>
 *        -> 202 {messageId, conversationId, duplicate}, only after the ingest committed
 *        -> 409 {error: "idempotency_key_reused"} when this token used the key in this place for another body
 *   GET  /v1/conversations/{place}/replies?after=<id>  -> 200 {replies: [{id, key, kind, text, at}]}
 *   GET  /v1/conversations/{place}/stream             -> text/event-stream, `event: reply`
 *        (with an id), and `event: delta` (streamed text of the reply to come; no id, not replayed)
 *
 * Every request needs `Authorization: Bearer <token>` whose SHA-256 is configured (401, no detail,
 * otherwise). Bad input gets 400 `{error: "invalid_request", problems: [{path, reason}]}`.
 */
import { Either, Schema } from "effect"
import { randomUUID, timingSafeEqual } from "node:crypto"
import * as fs from "node:fs/promises"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as path from "node:path"
import { problemsOf } from "../../domain/problems.js"
import type { Channel } from "../../pipeline/channel-contract.js"
import type { ConnectionRuntime, ConnectionRuntimeContext } from "../../runtimes/connection-runtime-contract.js"
import { bodyDigest, keyedEventId } from "./idempotency.js"
import { type Reply, ReplyBuffer } from "./replies.js"
import { hashToken, type HttpSettings, parseTokensFile } from "./settings.js"

const PostBody = Schema.Struct({
  text: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(100_000)),
  sender: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(255)))
})
const decodeBody = Schema.decodeUnknownEither(PostBody)
const ROUTE = /^\/v1\/conversations\/([^/]+)\/(messages|replies|stream)$/
const HEARTBEAT_MS = 15_000
/** A stream whose client reads slower than this much buffered output loses deltas (never replies). */
const DELTA_BACKLOG_BYTES = 1 << 20

interface Problem {
  readonly path: string
  readonly reason: string
}

class HttpFailure {
  constructor(readonly status: number, readonly body: Record<string, unknown>, readonly headers: Record<string, string> = {}) {}
}
const invalid = (problems: ReadonlyArray<Problem>) => new HttpFailure(400, { error: "invalid_request", problems })

const json = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  const data = JSON.stringify(body)
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(data), "cache-control": "no-store", ...headers })
  res.end(data)
}

const readBody = (req: http.IncomingMessage, limit: number) =>
  new Promise<string>((resolve, reject) => {
    const chunks: Array<Buffer> = []
    let size = 0
    req.on("data", (c: Buffer) => {
      size += c.length
      if (size > limit) {
        reject(new HttpFailure(413, { error: "payload_too_large", limit }))
        req.destroy()
      } else chunks.push(c)
    })
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")))
    req.on("error", reject)
  })

const placeOf = (raw: string): string => {
  let place: string
  try {
    place = decodeURIComponent(raw)
  } catch {
    throw invalid([{ path: "place", reason: "is not valid percent-encoding" }])
  }
  if (place.trim() === "" || place.length > 255) throw invalid([{ path: "place", reason: "must be 1-255 characters" }])
  return place
}

export interface HttpRuntimeOptions {
  readonly name: string
  readonly settings: HttpSettings
  /** tokensFile is relative to it. */
  readonly dataDir: string
}

export interface HttpRuntime extends ConnectionRuntime {
  /** The port it listens on, once started (useful with `port: 0`). */
  port(): number | undefined
}

export const makeHttpRuntime = (options: HttpRuntimeOptions): HttpRuntime => {
  const { name, settings } = options
  const replies = new ReplyBuffer(settings.keepReplies)
  let server: http.Server | undefined
  let listening = false
  let hashes: Array<Buffer> = []

  /** The configured hash of the request's bearer token, or undefined when it is not one of them. */
  const tokenOf = (req: http.IncomingMessage): string | undefined => {
    const header = req.headers.authorization
    if (header === undefined || !header.startsWith("Bearer ")) return undefined
    const digest = Buffer.from(hashToken(header.slice("Bearer ".length).trim()), "hex")
    let match: Buffer | undefined
    // Every hash is compared, so the time taken does not say which one matched.
    for (const h of hashes) if (timingSafeEqual(h, digest)) match = h
    return match?.toString("hex")
  }

  const handle = async (context: ConnectionRuntimeContext, req: http.IncomingMessage, res: http.ServerResponse) => {
    const url = new URL(req.url ?? "/", "http://localhost")
    const match = ROUTE.exec(url.pathname)
    const token = tokenOf(req)
    if (token === undefined) return json(res, 401, { error: "unauthorized" }, { "www-authenticate": "Bearer" })
    if (match === null) return json(res, 404, { error: "not_found" })
    const place = placeOf(match[1]!)
    const action = match[2]!
    const routes = context.routes(name)
    if (!routes.some((r) => r.place === place || r.place === "*")) throw new HttpFailure(404, { error: "no_route", problems: [{ path: "place", reason: `no enabled route of connection '${name}' matches this place` }] })
    const conversationId = `${name}:${place}`

    if (action === "messages") {
      if (req.method !== "POST") return json(res, 405, { error: "method_not_allowed" }, { allow: "POST" })
      const key = req.headers["idempotency-key"]
      const idem = Array.isArray(key) ? key[0] : key
      if (idem !== undefined && (idem.length === 0 || idem.length > 200 || !/^[\x21-\x7e]+$/.test(idem))) {
        throw invalid([{ path: "header.Idempotency-Key", reason: "must be 1-200 visible ASCII characters" }])
      }
      const raw = await readBody(req, settings.maxBodyBytes)
      let parsed: unknown
      try {
        parsed = JSON.parse(raw)
      } catch {
        throw invalid([{ path: "body", reason: "is not valid JSON" }])
      }
      const decoded = decodeBody(parsed, { errors: "all", onExcessProperty: "error" })
      if (Either.isLeft(decoded)) {
        throw invalid(problemsOf(decoded.left, ["body"]).map((p) => ({ path: p.path, reason: p.reason.replace(/,?\s*actual [\s\S]*$/, "") })))
      }
      const message = { sender: decoded.right.sender ?? "http", text: decoded.right.text }
      const unavailable = () => {
        throw new HttpFailure(503, { error: "unavailable" })
      }
      if (idem === undefined) {
        const result = await context.ingestMessage({ connection: name, place, providerEventId: `anon:${randomUUID()}`, ...message }).catch(unavailable)
        return json(res, 202, { messageId: result.messageId, conversationId: result.conversationId, duplicate: result.duplicate })
      }
      const result = await context.ingestMessage({
        connection: name,
        place,
        providerEventId: keyedEventId(token, place, idem),
        fingerprint: bodyDigest(message),
        ...message
      }).catch(unavailable)
      if (result.conflict) {
        throw new HttpFailure(409, {
          error: "idempotency_key_reused",
          problems: [{ path: "header.Idempotency-Key", reason: "this token already used this key in this place for a different message; use a new key for a new message" }]
        })
      }
      return json(res, 202, { messageId: result.messageId, conversationId: result.conversationId, duplicate: result.duplicate })
    }

    if (req.method !== "GET") return json(res, 405, { error: "method_not_allowed" }, { allow: "GET" })
    const afterRaw = url.searchParams.get("after") ?? (action === "stream" ? req.headers["last-event-id"] as string | undefined : undefined) ?? "0"
    if (!/^\d{1,16}$/.test(afterRaw)) throw invalid([{ path: url.searchParams.has("after") ? "query.after" : "header.Last-Event-ID", reason: "must be a reply id (a non-negative integer)" }])
    const after = Number(afterRaw)

    if (action === "replies") return json(res, 200, { conversationId, replies: replies.after(place, after) })

    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-store", connection: "keep-alive", "x-accel-buffering": "no" })
    const write = (r: Reply) => res.write(`id: ${r.id}\nevent: reply\ndata: ${JSON.stringify(r)}\n\n`)
    res.write("retry: 1000\n\n")
    for (const r of replies.after(place, after)) write(r)
    const unsubscribe = replies.subscribe(place, write)
    const unsubscribeDeltas = replies.subscribeDeltas(place, (d) => {
      if (res.writableLength < DELTA_BACKLOG_BYTES) res.write(`event: delta\ndata: ${JSON.stringify(d)}\n\n`)
    })
    const heartbeat = setInterval(() => res.write(": ping\n\n"), HEARTBEAT_MS)
    res.on("close", () => {
      clearInterval(heartbeat)
      unsubscribe()
      unsubscribeDeltas()
    })
  }

  const channel: Channel = {
    name,
    // A resend of a key already buffered is dropped; after a crash the buffer is new and the
    // reply carries its key, so a client that saw it before can tell.
    idempotentResends: true,
    send: (delivery) => {
      if (!listening) return Promise.reject(new Error(`http connection '${name}' is closed`))
      replies.add(delivery)
      return Promise.resolve()
    },
    progress: (event) => replies.progress(event)
  }

  return {
    name,
    port: () => {
      const a = server?.address()
      return a !== null && typeof a === "object" ? (a as AddressInfo).port : undefined
    },
    start: async (context) => {
      const fromFile = settings.tokensFile !== undefined
        ? parseTokensFile(name, await fs.readFile(path.resolve(options.dataDir, settings.tokensFile), "utf8").catch(() => {
          throw new Error(`connections.${name}.tokensFile: cannot read the file`)
        }))
        : []
      hashes = [...settings.tokens, ...fromFile].map((h) => Buffer.from(h, "hex"))
      const s = http.createServer((req, res) => {
        handle(context, req, res).catch((e: unknown) => {
          if (res.headersSent) return res.destroy()
          if (e instanceof HttpFailure) return json(res, e.status, e.body, e.headers)
          json(res, 500, { error: "internal" })
        })
      })
      s.keepAliveTimeout = 5_000
      await new Promise<void>((resolve, reject) => {
        s.once("error", (e: NodeJS.ErrnoException) => reject(new Error(`connections.${name}.port: cannot listen on ${settings.host}:${settings.port} (${e.code ?? "error"})`)))
        s.listen(settings.port, settings.host, () => resolve())
      })
      server = s
      listening = true
      context.channels.bind(channel)
    },
    close: async () => {
      listening = false
      const s = server
      server = undefined
      if (s === undefined) return
      await new Promise<void>((resolve) => {
        s.close(() => resolve())
        // Open SSE streams would hold close() forever.
        s.closeAllConnections()
      })
    },
    isReady: () => listening
  }
}
