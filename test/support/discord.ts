/**
 * The project's own fake of Discord for tests: a gateway (a WebSocket server, package `ws`) and a
 * REST API (an http server) in this process, enough of both for discord.js 14 to log in, hold a
 * session, RESUME it, and for the runtime to send, type and read history. JSON only (no zlib).
 *
 * Gateway (v10, `?v=10&encoding=json`):
 * - HELLO (op 10) on connect, HEARTBEAT (op 1) answered with HEARTBEAT_ACK (op 11);
 * - IDENTIFY (op 2): a wrong token closes with 4004; otherwise a new session and READY (user,
 *   no guilds, session_id, resume_gateway_url);
 * - RESUME (op 6) of a known session: the events it missed are replayed (when the outage said
 *   so), then RESUMED; an unknown session gets INVALID_SESSION (op 9, not resumable);
 * - dispatches: MESSAGE_CREATE for user messages and for the bot's own, each with the session's
 *   next sequence number;
 * - an outage: `down()` drops every connection (close code 1006 for the client) and holds new
 *   ones without HELLO until `up()`; it may forget the sessions (a RESUME is then refused). Messages said meanwhile are kept in the channel's history
 *   (REST) and, unless the outage replays, never dispatched.
 *
 * REST (`/api/v10`, `Authorization: Bot <token>`, 401 otherwise): `GET /gateway/bot`,
 * `GET /users/@me`, `POST /channels/:id/messages` (with `nonce` + `enforce_nonce`: a repeat
 * returns the first message and creates none; JSON, or multipart with `payload_json` and
 * `files[n]`, each file kept with its name, type and bytes), `POST /channels/:id/typing`,
 * `GET /channels/:id/messages?after=&limit=` (newest first, as Discord answers), and faults on
 * demand: a channel whose history the bot may not read (403, code 50001), and 429s with
 * Retry-After for the next sends.
 *
 * CDN: a user's message may carry attachments (`attachments: [{ id, filename, content_type, size,
 * url }]`); their URLs are served without a token from `cdnOrigin` (the REST server's origin,
 * `/attachments/:channel/:id/:name`, with their length; one whose message misstates its size in
 * chunks without a length), and every download is recorded.
 *
 * Not covered: zlib compression, ETF, sharding, guild/channel objects (READY has no guilds),
 * presence, voice, gateway rate limits, interactions, embeds, edits and deletes, attachment
 * limits by boost level, signed CDN URL expiry.
 */
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { type WebSocket, WebSocketServer } from "ws"

export interface DiscordUser {
  readonly id: string
  readonly username: string
}

export interface SayOptions {
  readonly channelId: string
  /** A guild channel (or a thread in one); absent for a direct message. */
  readonly guildId?: string
  readonly author: DiscordUser & { readonly bot?: boolean }
  readonly content: string
  /** Users mentioned (`<@id>` is put in the text by the caller when it wants one). */
  readonly mentions?: ReadonlyArray<string>
  /** The id of the message this one answers. */
  readonly replyTo?: string
  /** Files sent with it, served from `cdnOrigin`; `size` (then served without a length) and `url` override what the message says of them. */
  readonly attachments?: ReadonlyArray<{ readonly filename: string; readonly contentType?: string; readonly bytes: Uint8Array; readonly size?: number; readonly url?: string }>
}

export interface Attachment {
  readonly id: string
  readonly filename: string
  readonly content_type?: string
  readonly size: number
  readonly url: string
}

/** A file the bot posted, as the fake received it. */
export interface SentFile {
  readonly messageId: string
  readonly name: string
  readonly contentType: string
  readonly bytes: Uint8Array
  readonly nonce?: string
}

export interface StoredMessage {
  readonly id: string
  readonly channel_id: string
  readonly guild_id?: string
  readonly author: { readonly id: string; readonly username: string; readonly bot?: boolean }
  readonly content: string
  readonly type: number
  readonly timestamp: string
  readonly mentions: ReadonlyArray<{ readonly id: string; readonly username: string }>
  readonly referenced_message?: StoredMessage | null
  readonly nonce?: string
  readonly attachments: ReadonlyArray<Attachment>
}

export interface FakeDiscord {
  readonly apiRoot: string
  /** Where attachment URLs point (the origin to list in the connection's `fileOrigins`). */
  readonly cdnOrigin: string
  readonly token: string
  readonly bot: DiscordUser
  /** A user posts a message: stored in the channel's history and dispatched (unless the gateway is down). */
  readonly say: (options: SayOptions) => StoredMessage
  /** Dispatches a stored message again (a redelivery). */
  readonly redeliver: (message: StoredMessage) => void
  /** Dispatches any payload as MESSAGE_CREATE (malformed ones included). */
  readonly dispatchRaw: (d: unknown) => void
  /** Calls `listener` after each message the bot posts (until the returned function is called). */
  readonly onPosted: (listener: (message: StoredMessage) => void) => () => void
  /** The texts the bot posted in a channel, oldest first. */
  readonly sent: (channelId: string) => ReadonlyArray<string>
  /** What the bot posted, with nonces. */
  readonly sentRaw: (channelId: string) => ReadonlyArray<StoredMessage>
  /** Posts as the bot (as a process that crashed after its call would have). */
  readonly postAsBot: (channelId: string, content: string, nonce: string) => void
  /** The files the bot posted in a channel, oldest first. */
  readonly sentFiles: (channelId: string) => ReadonlyArray<SentFile>
  /** The attachment ids downloaded from the CDN, in order. */
  readonly downloads: () => ReadonlyArray<string>
  readonly typing: (channelId: string) => number
  /** The bot may not read this channel's history (GET answers 403 Missing Access). */
  readonly forbidHistory: (channelId: string) => void
  /** The next `times` sends answer 429 with Retry-After `seconds`. */
  readonly rateLimitSends: (times: number, seconds: number) => void
  /** When each send arrived (performance.now()) and whether it was answered 429. */
  readonly postTimes: () => ReadonlyArray<{ readonly at: number; readonly limited: boolean }>
  readonly counts: () => { readonly identifies: number; readonly resumes: number; readonly heartbeats: number; readonly historyReads: number; readonly posts: number }
  /** Drops every gateway connection and holds new ones until `up`; `replay`: the missed events are replayed on RESUME. */
  readonly down: (options?: { readonly replay?: boolean; readonly forgetSessions?: boolean }) => void
  readonly up: () => void
  readonly stop: () => Promise<void>
}

const OP = { Dispatch: 0, Heartbeat: 1, Identify: 2, Resume: 6, InvalidSession: 9, Hello: 10, HeartbeatAck: 11 } as const

interface Session {
  readonly id: string
  seq: number
  socket: WebSocket | undefined
  /** Events after the socket dropped, replayed on RESUME when the outage says so. */
  missed: Array<{ s: number; t: string; d: unknown }>
}

const listen = (server: http.Server) =>
  new Promise<number>((resolve, reject) => {
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => resolve((server.address() as AddressInfo).port))
  })

export const startDiscord = async (options: { readonly token?: string; readonly heartbeatMs?: number } = {}): Promise<FakeDiscord> => {
  const token = options.token ?? "fake-discord-token"
  const bot: DiscordUser = { id: "900000000000000001", username: "pynchy" }
  const messages = new Map<string, Array<StoredMessage>>()
  const typing = new Map<string, number>()
  const forbidden = new Set<string>()
  const stored = new Map<string, { readonly contentType: string; readonly bytes: Uint8Array; readonly chunked: boolean }>()
  const files = new Map<string, Array<SentFile>>()
  const downloads: Array<string> = []
  let cdnOrigin = ""
  const sessions = new Map<string, Session>()
  const held = new Set<WebSocket>()
  const counts = { identifies: 0, resumes: 0, heartbeats: 0, historyReads: 0, posts: 0 }
  let rateLimit = { times: 0, seconds: 0 }
  const postTimes: Array<{ at: number; limited: boolean }> = []
  const posted = new Set<(message: StoredMessage) => void>()
  let isDown = false
  let replay = false
  let nextId = 1_100_000_000_000_000_000n
  const snowflake = () => String(nextId++)

  const history = (channelId: string) => {
    const list = messages.get(channelId) ?? []
    messages.set(channelId, list)
    return list
  }

  // ---- gateway ----
  const gatewayHttp = http.createServer()
  const wss = new WebSocketServer({ server: gatewayHttp })
  const gatewayPort = await listen(gatewayHttp)
  const gatewayUrl = `ws://127.0.0.1:${gatewayPort}`
  const heartbeatMs = options.heartbeatMs ?? 5_000

  const sendTo = (socket: WebSocket, payload: unknown) => socket.send(JSON.stringify(payload))
  const hello = (socket: WebSocket) => sendTo(socket, { op: OP.Hello, d: { heartbeat_interval: heartbeatMs } })
  const dispatchIn = (session: Session, t: string, d: unknown) => {
    session.seq += 1
    if (session.socket !== undefined) sendTo(session.socket, { op: OP.Dispatch, t, s: session.seq, d })
    else if (replay) session.missed.push({ s: session.seq, t, d })
  }
  const dispatch = (t: string, d: unknown) => {
    for (const session of sessions.values()) dispatchIn(session, t, d)
  }

  wss.on("connection", (socket) => {
    let session: Session | undefined
    socket.on("message", (data) => {
      let payload: { op?: number; d?: Record<string, unknown> | number | null }
      try {
        payload = JSON.parse(String(data)) as typeof payload
      } catch {
        return socket.close(4002, "Decode error")
      }
      const d = (payload.d ?? {}) as Record<string, unknown>
      switch (payload.op) {
        case OP.Heartbeat:
          counts.heartbeats += 1
          return sendTo(socket, { op: OP.HeartbeatAck })
        case OP.Identify: {
          if (d["token"] !== token) return socket.close(4004, "Authentication failed")
          counts.identifies += 1
          session = { id: `session-${counts.identifies}`, seq: 0, socket, missed: [] }
          sessions.set(session.id, session)
          return dispatchIn(session, "READY", {
            v: 10,
            user: { ...bot, bot: true, discriminator: "0", avatar: null, global_name: null },
            guilds: [],
            session_id: session.id,
            resume_gateway_url: gatewayUrl,
            application: { id: bot.id, flags: 0 }
          })
        }
        case OP.Resume: {
          const known = sessions.get(String(d["session_id"]))
          if (d["token"] !== token || known === undefined) return sendTo(socket, { op: OP.InvalidSession, d: false })
          counts.resumes += 1
          session = known
          session.socket = socket
          for (const e of session.missed.filter((m) => m.s > Number(d["seq"]))) sendTo(socket, { op: OP.Dispatch, t: e.t, s: e.s, d: e.d })
          session.missed = []
          return dispatchIn(session, "RESUMED", {})
        }
        default:
          return socket.close(4001, "Unknown opcode")
      }
    })
    socket.on("close", () => {
      held.delete(socket)
      if (session !== undefined && session.socket === socket) session.socket = undefined
    })
    if (isDown) held.add(socket)
    else hello(socket)
  })

  // ---- REST ----
  const answer = (res: http.ServerResponse, status: number, body?: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { "content-type": "application/json", ...headers })
    res.end(body === undefined ? undefined : JSON.stringify(body))
  }
  const attach = (channelId: string, file: { filename: string; contentType?: string; bytes: Uint8Array; size?: number; url?: string }): Attachment => {
    const id = snowflake()
    // A file whose message misstates its size is served without a length, in chunks: only a reader's own count catches it.
    stored.set(id, { contentType: file.contentType ?? "application/octet-stream", bytes: file.bytes, chunked: file.size !== undefined })
    return {
      id,
      filename: file.filename,
      ...(file.contentType !== undefined ? { content_type: file.contentType } : {}),
      size: file.size ?? file.bytes.byteLength,
      url: file.url ?? `${cdnOrigin}/attachments/${channelId}/${id}/${encodeURIComponent(file.filename)}?ex=signed`
    }
  }
  const post = (channelId: string, content: string, nonce: string | undefined, enforce: boolean, upload: ReadonlyArray<File> = [], uploaded: ReadonlyArray<Uint8Array> = []): StoredMessage => {
    const list = history(channelId)
    const earlier = enforce && nonce !== undefined ? list.find((m) => m.author.id === bot.id && m.nonce === nonce) : undefined
    if (earlier !== undefined) return earlier
    const id = snowflake()
    const attachments = upload.map((f, i) => attach(channelId, { filename: f.name, contentType: f.type, bytes: uploaded[i]! }))
    for (const [i, f] of upload.entries()) {
      const sent = files.get(channelId) ?? []
      files.set(channelId, sent)
      sent.push({ messageId: id, name: f.name, contentType: f.type, bytes: uploaded[i]!, ...(nonce !== undefined ? { nonce } : {}) })
    }
    const message: StoredMessage = {
      id,
      channel_id: channelId,
      author: { ...bot, bot: true },
      content,
      type: 0,
      timestamp: new Date().toISOString(),
      mentions: [],
      attachments,
      ...(nonce !== undefined ? { nonce } : {})
    }
    list.push(message)
    dispatch("MESSAGE_CREATE", message)
    for (const listener of posted) listener(message)
    return message
  }
  const rest = http.createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => void respond(req, res, Buffer.concat(chunks)).catch(() => answer(res, 400, { message: "400: Bad Request", code: 0 })))
  })
  /** A JSON body, or a multipart one (`payload_json` and `files[n]`, as Discord takes uploads). */
  const bodyOf = async (req: http.IncomingMessage, raw: Buffer): Promise<{ readonly body: Record<string, unknown>; readonly files: ReadonlyArray<File>; readonly bytes: ReadonlyArray<Uint8Array> }> => {
    const type = req.headers["content-type"] ?? ""
    if (!type.startsWith("multipart/form-data")) return { body: raw.length > 0 ? JSON.parse(raw.toString("utf8")) as Record<string, unknown> : {}, files: [], bytes: [] }
    const form = await new Response(raw, { headers: { "content-type": type } }).formData()
    const payload = form.get("payload_json")
    const uploads = [...form.entries()].filter(([k, v]) => /^files\[\d+\]$/.test(k) && typeof v !== "string").map(([, v]) => v as File)
    return {
      body: typeof payload === "string" ? JSON.parse(payload) as Record<string, unknown> : {},
      files: uploads,
      bytes: await Promise.all(uploads.map(async (f) => new Uint8Array(await f.arrayBuffer())))
    }
  }
  const respond = async (req: http.IncomingMessage, res: http.ServerResponse, raw: Buffer) => {
    const url = new URL(req.url ?? "/", "http://fake")
    // The CDN: no token, as Discord's signed attachment URLs.
    const cdn = /^\/attachments\/\d+\/(\d+)\/[^/]+$/.exec(url.pathname)
    if (req.method === "GET" && cdn !== null) {
      const file = stored.get(cdn[1]!)
      if (file === undefined) return answer(res, 404, { message: "404: Not Found", code: 0 })
      downloads.push(cdn[1]!)
      res.writeHead(200, { "content-type": file.contentType, ...(file.chunked ? {} : { "content-length": String(file.bytes.byteLength) }) })
      if (!file.chunked) return void res.end(file.bytes)
      for (let at = 0; at < file.bytes.byteLength; at += 256) res.write(file.bytes.subarray(at, at + 256))
      return void res.end()
    }
    const route = url.pathname.replace(/^\/api\/v10/, "")
    if (req.headers.authorization !== `Bot ${token}`) return answer(res, 401, { message: "401: Unauthorized", code: 0 })
    const { body, files: upload, bytes: uploaded } = await bodyOf(req, raw)
    if (req.method === "GET" && route === "/gateway/bot") {
      return answer(res, 200, { url: gatewayUrl, shards: 1, session_start_limit: { total: 1000, remaining: 999, reset_after: 0, max_concurrency: 1 } })
    }
    if (req.method === "GET" && route === "/users/@me") return answer(res, 200, { ...bot, bot: true, discriminator: "0", avatar: null })
    const channel = /^\/channels\/(\d+)\/(messages|typing)$/.exec(route)
    if (channel === null) return answer(res, 404, { message: "404: Not Found", code: 0 })
    const [, channelId, what] = channel as unknown as [string, string, string]
    if (req.method === "POST" && what === "typing") {
      typing.set(channelId, (typing.get(channelId) ?? 0) + 1)
      return answer(res, 204)
    }
    if (req.method === "POST" && what === "messages") {
      counts.posts += 1
      postTimes.push({ at: performance.now(), limited: rateLimit.times > 0 })
      if (rateLimit.times > 0) {
        rateLimit.times -= 1
        return answer(res, 429, { message: "You are being rate limited.", retry_after: rateLimit.seconds, global: false }, {
          "retry-after": String(rateLimit.seconds),
          "x-ratelimit-scope": "user"
        })
      }
      const content = body["content"] ?? ""
      if (typeof content !== "string" || (content.length === 0 && upload.length === 0) || content.length > 2000) {
        return answer(res, 400, { message: "Invalid Form Body", code: 50035 })
      }
      const nonce = typeof body["nonce"] === "string" ? body["nonce"] : undefined
      return answer(res, 200, post(channelId, content, nonce, body["enforce_nonce"] === true, upload, uploaded))
    }
    if (req.method === "GET" && what === "messages") {
      counts.historyReads += 1
      if (forbidden.has(channelId)) return answer(res, 403, { message: "Missing Access", code: 50001 })
      const after = BigInt(url.searchParams.get("after") ?? "0")
      const limit = Math.min(100, Number(url.searchParams.get("limit") ?? 50))
      const page = history(channelId).filter((m) => BigInt(m.id) > after).slice(0, limit)
      return answer(res, 200, [...page].reverse())
    }
    return answer(res, 405, { message: "405: Method Not Allowed", code: 0 })
  }
  const restPort = await listen(rest)
  cdnOrigin = `http://127.0.0.1:${restPort}`

  return {
    apiRoot: `http://127.0.0.1:${restPort}/api`,
    cdnOrigin,
    token,
    bot,
    say: (o) => {
      const list = history(o.channelId)
      const replied = o.replyTo === undefined ? undefined : list.find((m) => m.id === o.replyTo) ?? null
      const id = snowflake()
      const message: StoredMessage = {
        id,
        channel_id: o.channelId,
        ...(o.guildId !== undefined ? { guild_id: o.guildId } : {}),
        author: { id: o.author.id, username: o.author.username, ...(o.author.bot === true ? { bot: true } : {}) },
        content: o.content,
        type: replied === undefined ? 0 : 19,
        timestamp: new Date().toISOString(),
        mentions: (o.mentions ?? []).map((id) => ({ id, username: id === bot.id ? bot.username : `user${id}` })),
        ...(replied !== undefined ? { referenced_message: replied } : {}),
        attachments: (o.attachments ?? []).map((a) => attach(o.channelId, a))
      }
      list.push(message)
      dispatch("MESSAGE_CREATE", message)
      return message
    },
    redeliver: (message) => dispatch("MESSAGE_CREATE", message),
    dispatchRaw: (d) => dispatch("MESSAGE_CREATE", d),
    onPosted: (listener) => {
      posted.add(listener)
      return () => void posted.delete(listener)
    },
    sent: (channelId) => history(channelId).filter((m) => m.author.id === bot.id).map((m) => m.content),
    sentRaw: (channelId) => history(channelId).filter((m) => m.author.id === bot.id),
    postAsBot: (channelId, content, nonce) => void post(channelId, content, nonce, true),
    sentFiles: (channelId) => [...(files.get(channelId) ?? [])],
    downloads: () => [...downloads],
    typing: (channelId) => typing.get(channelId) ?? 0,
    forbidHistory: (channelId) => void forbidden.add(channelId),
    rateLimitSends: (times, seconds) => void (rateLimit = { times, seconds }),
    postTimes: () => [...postTimes],
    counts: () => ({ ...counts }),
    down: (o = {}) => {
      isDown = true
      replay = o.replay === true
      // As after a long outage: a RESUME then gets INVALID_SESSION, and the client IDENTIFYs afresh.
      if (o.forgetSessions === true) sessions.clear()
      for (const client of wss.clients) client.terminate()
    },
    up: () => {
      isDown = false
      for (const socket of held) hello(socket)
      held.clear()
    },
    stop: async () => {
      for (const client of wss.clients) client.terminate()
      await new Promise<void>((resolve) => wss.close(() => resolve()))
      await new Promise<void>((resolve) => gatewayHttp.close(() => resolve()))
      rest.closeAllConnections()
      await new Promise<void>((resolve) => rest.close(() => resolve()))
    }
  }
}
