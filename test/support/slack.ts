/**
 * The project's own fake Slack: a Web API over HTTP and a Socket Mode WebSocket server, enough
 * of both for the Slack runtime through real @slack/bolt (the runtime points `slackApiUrl` here).
 *
 * Web API (`POST /api/<method>`, form or JSON bodies, the token in `Authorization: Bearer`):
 * - auth.test: the bot token answers the bot's identity; any other token `invalid_auth`;
 * - apps.connections.open: the app token answers a one-use `ws://` URL of the socket server;
 * - chat.postMessage: records `{channel, thread_ts, text}` and answers a new `ts`;
 * - files.getUploadURLExternal (filename, length): a one-use `upload_url` on this server, where a
 *   POST of exactly `length` raw bytes is kept; files.completeUploadExternal (`files: [{id,
 *   title}]`, `channel_id`, `thread_ts`): the uploaded file is shared there and recorded
 *   (`uploads`, byte for byte), and kept in history as the bot's `file_share` message;
 * - the file host: `url_private_download` of the files users share (`say` with `files`) is served at
 *   `GET /files-pri/...` only with the bot token as `Authorization: Bearer` (otherwise a 302 to a
 *   sign-in page, as Slack answers); every request is recorded (`downloads`);
 * - conversations.history / conversations.replies: a channel's messages (thread replies left out)
 *   newest first, or a thread's (its parent first) oldest first, after `oldest`, in pages of
 *   `historyPageSize` with `has_more` and `response_metadata.next_cursor`; users' messages and the
 *   bot's own posts (with `bot_id`) are both in it, as in Slack;
 * - anything else: `unknown_method`. Every call is recorded; faults on demand: the next calls of a
 *   method answer 429 with `Retry-After`, or an outage (nothing listens: connection refused).
 *
 * Socket Mode, as Slack documents it: a connection opened with a valid ticket gets
 * `{"type":"hello"}`; events go out as `events_api` envelopes with an `envelope_id`, and the
 * client's `{"envelope_id"}` messages are its acks. Like Slack, an event that finds no open
 * connection waits for the next one (Slack retries for a few minutes), and `redeliver` sends an
 * event again with `retry_attempt` + 1, as Slack does when an ack did not come.
 */
import { createHmac } from "node:crypto"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import type * as net from "node:net"
import { type WebSocket, WebSocketServer } from "ws"

export interface Posted {
  readonly channel: string
  readonly threadTs: string | undefined
  readonly text: string
}

/** A file a user shares: its bytes, and what the event says of it (its size defaults to the bytes'). */
export interface FakeFile {
  readonly name: string
  readonly mimetype?: string
  readonly bytes?: Uint8Array
  /** The size the event claims. */
  readonly size?: number
  /** `url_private_download` elsewhere than the fake's file host. */
  readonly url?: string
  /** The file host answers its URL with a 302 to this address (even with the token). */
  readonly redirectTo?: string
}

export interface Uploaded {
  readonly channel: string
  readonly threadTs: string | undefined
  readonly fileId: string
  readonly filename: string
  readonly title: string | undefined
  readonly bytes: Uint8Array
}

export interface SentEvent {
  readonly eventId: string
  readonly ts: string
  readonly body: Record<string, unknown>
}

export interface FakeSlack {
  readonly apiUrl: string
  readonly botToken: string
  readonly appToken: string
  readonly botUserId: string
  /**
   * A user's message: an `event_callback` with a `message` event, sent over the socket (or queued),
   * and kept in the channel's history. `lost`: only in history, its event never sent (an outage
   * longer than Slack's redelivery).
   */
  readonly say: (options: { readonly channel: string; readonly user?: string; readonly text: string; readonly channelType?: "im" | "channel" | "group" | "mpim"; readonly threadTs?: string; readonly parentUserId?: string; readonly lost?: boolean; readonly files?: ReadonlyArray<FakeFile> }) => SentEvent
  /** Files shared in a channel (and thread) through files.completeUploadExternal, in order. */
  readonly uploads: (channel: string, threadTs?: string) => ReadonlyArray<Uploaded>
  /** Requests to the file host: the path, and whether they carried the bot token. */
  readonly downloads: () => ReadonlyArray<{ readonly path: string; readonly authorized: boolean }>
  /** Messages per history page at most (Slack's own page may be smaller than the `limit` asked for). */
  historyPageSize: number
  /** Sends any event callback body (malformed ones too) in an envelope. */
  readonly sendBody: (body: unknown) => string
  /** Sends an already sent event again, as Slack's retry does. */
  readonly redeliver: (event: SentEvent) => void
  /** The envelope ids the client acknowledged. */
  readonly acked: () => ReadonlySet<string>
  /** The envelope id each event id was last sent under. */
  readonly envelopeOf: (eventId: string) => string | undefined
  readonly posted: (channel: string, threadTs?: string) => ReadonlyArray<Posted>
  /** Resolves when a message with exactly this text is posted to the channel. */
  readonly awaitPost: (channel: string, text: string) => Promise<void>
  readonly calls: (method: string) => number
  /** The next `times` calls of `method` (after `skip`) answer 429 with Retry-After seconds. */
  /** The next `times` calls of `method` (after `skip` more; only those to `channel` when given) get a 429. */
  readonly rateLimitNext: (method: string, times: number, retryAfterSeconds: number, skip?: number, channel?: string) => void
  readonly callTimes: (method: string) => ReadonlyArray<{ readonly at: number; readonly limited: boolean }>
  /** Open Socket Mode connections. */
  readonly connections: () => number
  /** Every open socket is cut (no close frame), as when a network drops. */
  readonly dropSockets: () => void
  /** Slack asks the client to reconnect (`{"type":"disconnect","reason":"refresh_requested"}`). */
  readonly refresh: () => void
  /** Web API and socket server stop listening (connection refused) until `up`. */
  readonly down: () => Promise<void>
  readonly up: () => Promise<void>
  readonly stop: () => Promise<void>
}

/** A signed Events API request as Slack sends it in HTTP mode (v0 signature over `v0:<ts>:<body>`). */
export const signedRequest = (url: string, signingSecret: string, body: unknown, options: { readonly badSignature?: boolean; readonly timestamp?: number; readonly retryNum?: number } = {}) => {
  const raw = JSON.stringify(body)
  const timestamp = options.timestamp ?? Math.floor(Date.now() / 1000)
  const signature = "v0=" + createHmac("sha256", options.badSignature ? "wrong-secret" : signingSecret).update(`v0:${timestamp}:${raw}`).digest("hex")
  return fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-slack-request-timestamp": String(timestamp),
      "x-slack-signature": signature,
      ...(options.retryNum !== undefined ? { "x-slack-retry-num": String(options.retryNum), "x-slack-retry-reason": "http_error" } : {})
    },
    body: raw
  })
}

const readBody = (req: http.IncomingMessage) =>
  new Promise<Record<string, unknown>>((resolve) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8")
      if ((req.headers["content-type"] ?? "").includes("json")) return resolve(text === "" ? {} : JSON.parse(text) as Record<string, unknown>)
      resolve(Object.fromEntries(new URLSearchParams(text)))
    })
  })

export const startFakeSlack = async (): Promise<FakeSlack> => {
  const botToken = "xoxb-test-bot-token"
  const appToken = "xapp-test-app-token"
  const botUserId = "UBOT0001"
  const posts: Array<Posted> = []
  const postWatchers = new Set<(p: Posted) => void>()
  const times = new Map<string, Array<{ at: number; limited: boolean }>>()
  const limits = new Map<string, { times: number; retryAfter: number; skip: number; channel: string | undefined }>()
  const tickets = new Set<string>()
  const sockets = new Set<WebSocket>()
  const acks = new Set<string>()
  const envelopes = new Map<string, string>()
  const waiting: Array<string> = []
  /** Every message in each channel, oldest first, as conversations.history gives them. */
  const history = new Map<string, Array<Record<string, unknown> & { ts: string; thread_ts?: string }>>()
  const remember = (channel: string, message: Record<string, unknown> & { ts: string; thread_ts?: string }) =>
    void history.set(channel, [...(history.get(channel) ?? []), message])
  const tsAfter = (a: string, b: string) => Number(a) > Number(b)
  let seq = 0
  let clock = 1_800_000_000
  /** Files users shared, served at their url_private_download path. */
  const hosted = new Map<string, Uint8Array | { readonly redirectTo: string }>()
  const fetched: Array<{ path: string; authorized: boolean }> = []
  /** Upload tickets: what getUploadURLExternal announced, and the bytes once POSTed. */
  const uploadTickets = new Map<string, { filename: string; length: number; bytes: Uint8Array | undefined; completed: boolean }>()
  const uploaded: Array<Uploaded> = []

  const answer = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { "content-type": "application/json", ...headers })
    res.end(JSON.stringify(body))
  }

  /** The file host and the upload URLs: raw bytes, not Web API calls. */
  const fileHost = (req: http.IncomingMessage, res: http.ServerResponse): boolean => {
    const url = req.url ?? ""
    if (req.method === "GET" && url.startsWith("/files-pri/")) {
      const authorized = req.headers.authorization === `Bearer ${botToken}`
      fetched.push({ path: url, authorized })
      const bytes = hosted.get(url)
      if (!authorized) res.writeHead(302, { location: "https://fake.slack.test/signin" }).end()
      else if (bytes === undefined) res.writeHead(404).end()
      else if (!(bytes instanceof Uint8Array)) res.writeHead(302, { location: bytes.redirectTo }).end()
      else res.writeHead(200, { "content-type": "application/octet-stream", "content-length": String(bytes.byteLength) }).end(bytes)
      return true
    }
    const upload = /^\/upload\/v1\/(F\w+)$/.exec(url)
    if (req.method === "POST" && upload !== null) {
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("end", () => {
        const ticket = uploadTickets.get(upload[1]!)
        const bytes = Buffer.concat(chunks)
        if (ticket === undefined || ticket.bytes !== undefined || bytes.byteLength !== ticket.length) return void res.writeHead(400).end("bad upload")
        ticket.bytes = new Uint8Array(bytes)
        res.writeHead(200, { "content-type": "text/plain" }).end(`OK - ${bytes.byteLength}`)
      })
      return true
    }
    return false
  }

  const api = http.createServer((req, res) => {
    if (fileHost(req, res)) return
    void readBody(req).then((params) => {
      const method = /^\/api\/([\w.]+)/.exec(req.url ?? "")?.[1] ?? ""
      const calls = times.get(method) ?? []
      times.set(method, calls)
      const call = { at: performance.now(), limited: false }
      calls.push(call)
      const configured = limits.get(method)
      const limit = configured?.channel === undefined || configured.channel === params["channel"] ? configured : undefined
      if (limit !== undefined && limit.skip > 0) limit.skip -= 1
      else if (limit !== undefined && limit.times > 0) {
        limit.times -= 1
        call.limited = true
        return answer(res, 429, { ok: false, error: "ratelimited" }, { "retry-after": String(limit.retryAfter) })
      }
      const token = (req.headers.authorization ?? "").replace(/^Bearer /, "") || String(params["token"] ?? "")
      switch (method) {
        case "auth.test":
          return token === botToken
            ? answer(res, 200, { ok: true, url: "https://fake.slack.test/", team: "Fake Team", user: "pynchy", team_id: "T0001", user_id: botUserId, bot_id: "B0001" })
            : answer(res, 200, { ok: false, error: "invalid_auth" })
        case "apps.connections.open": {
          if (token !== appToken) return answer(res, 200, { ok: false, error: "invalid_auth" })
          const ticket = `t${++seq}`
          tickets.add(ticket)
          return answer(res, 200, { ok: true, url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/link/?ticket=${ticket}` })
        }
        case "chat.postMessage": {
          if (token !== botToken) return answer(res, 200, { ok: false, error: "invalid_auth" })
          const channel = String(params["channel"] ?? "")
          if (!/^[A-Z0-9]+$/.test(channel)) return answer(res, 200, { ok: false, error: "channel_not_found" })
          const threadTs = params["thread_ts"] === undefined ? undefined : String(params["thread_ts"])
          const post = { channel, threadTs, text: String(params["text"] ?? "") }
          posts.push(post)
          for (const w of postWatchers) w(post)
          const ts = `${++clock}.000100`
          remember(channel, { type: "message", user: botUserId, bot_id: "B0001", text: post.text, ts, ...(threadTs !== undefined ? { thread_ts: threadTs } : {}) })
          return answer(res, 200, { ok: true, channel, ts })
        }
        case "files.getUploadURLExternal": {
          if (token !== botToken) return answer(res, 200, { ok: false, error: "invalid_auth" })
          const length = Number(params["length"])
          const filename = String(params["filename"] ?? "")
          if (!Number.isInteger(length) || length < 0 || filename === "") return answer(res, 200, { ok: false, error: "invalid_arguments" })
          const fileId = `F${String(++seq).padStart(8, "0")}`
          uploadTickets.set(fileId, { filename, length, bytes: undefined, completed: false })
          return answer(res, 200, { ok: true, upload_url: `http://127.0.0.1:${apiPort}/upload/v1/${fileId}`, file_id: fileId })
        }
        case "files.completeUploadExternal": {
          if (token !== botToken) return answer(res, 200, { ok: false, error: "invalid_auth" })
          const channel = String(params["channel_id"] ?? "")
          if (!/^[A-Z0-9]+$/.test(channel)) return answer(res, 200, { ok: false, error: "channel_not_found" })
          const threadTs = params["thread_ts"] === undefined ? undefined : String(params["thread_ts"])
          let files: Array<{ id?: unknown; title?: unknown }>
          try {
            files = JSON.parse(String(params["files"] ?? "[]")) as typeof files
          } catch {
            return answer(res, 200, { ok: false, error: "invalid_arguments" })
          }
          const done = files.map((f) => ({ f, ticket: uploadTickets.get(String(f.id)) }))
          if (done.length === 0 || done.some(({ ticket }) => ticket?.bytes === undefined || ticket.completed)) return answer(res, 200, { ok: false, error: "file_not_found" })
          for (const { f, ticket } of done) {
            ticket!.completed = true
            const record = { channel, threadTs, fileId: String(f.id), filename: ticket!.filename, title: typeof f.title === "string" ? f.title : undefined, bytes: ticket!.bytes! }
            uploaded.push(record)
            remember(channel, { type: "message", subtype: "file_share", user: botUserId, bot_id: "B0001", text: "", ts: `${++clock}.000100`, files: [{ id: record.fileId, name: record.filename }], ...(threadTs !== undefined ? { thread_ts: threadTs } : {}) })
          }
          return answer(res, 200, { ok: true, files: done.map(({ f }) => ({ id: String(f.id), title: f.title })) })
        }
        case "conversations.history":
        case "conversations.replies": {
          if (token !== botToken) return answer(res, 200, { ok: false, error: "invalid_auth" })
          const channel = String(params["channel"] ?? "")
          if (!history.has(channel)) return answer(res, 200, { ok: false, error: "channel_not_found" })
          const oldest = String(params["oldest"] ?? "0")
          const thread = params["ts"] === undefined ? undefined : String(params["ts"])
          const all = history.get(channel)!.filter((m) => tsAfter(m.ts, oldest) && (thread === undefined
            ? m.thread_ts === undefined || m.thread_ts === m.ts
            : m.ts === thread || m.thread_ts === thread))
          const ordered = thread === undefined ? [...all].reverse() : all
          const from = Number(params["cursor"] ?? 0)
          const size = Math.min(Number(params["limit"] ?? 100), fake.historyPageSize)
          const page = ordered.slice(from, from + size)
          const more = from + size < ordered.length
          return answer(res, 200, { ok: true, messages: page, has_more: more, response_metadata: { next_cursor: more ? String(from + size) : "" } })
        }
        default:
          return answer(res, 200, { ok: false, error: "unknown_method" })
      }
    })
  })

  const wss = new WebSocketServer({ host: "127.0.0.1", port: 0 })
  await new Promise<void>((resolve) => wss.once("listening", () => resolve()))
  const wsPort = (wss.address() as AddressInfo).port
  const pending = new Map<string, string>()

  const flush = () => {
    const open = [...sockets].find((s) => s.readyState === s.OPEN)
    if (open === undefined) return
    while (waiting.length > 0) open.send(waiting.shift()!)
  }
  wss.on("connection", (socket, req) => {
    const ticket = new URL(req.url ?? "/", "http://x").searchParams.get("ticket") ?? ""
    if (!tickets.delete(ticket)) return socket.close(4001, "invalid ticket")
    sockets.add(socket)
    socket.on("close", () => sockets.delete(socket))
    socket.on("message", (data) => {
      const message = JSON.parse(String(data)) as { envelope_id?: string }
      if (typeof message.envelope_id === "string") acks.add(message.envelope_id)
    })
    socket.send(JSON.stringify({ type: "hello", num_connections: sockets.size, debug_info: { host: "fake" }, connection_info: { app_id: "A0001" } }))
    flush()
  })

  const envelope = (body: unknown, eventId: string | undefined, retryAttempt: number) => {
    const id = `env-${++seq}`
    if (eventId !== undefined) envelopes.set(eventId, id)
    const raw = JSON.stringify({ envelope_id: id, type: "events_api", payload: body, accepts_response_payload: false, retry_attempt: retryAttempt, ...(retryAttempt > 0 ? { retry_reason: "timeout" } : {}) })
    pending.set(id, raw)
    waiting.push(raw)
    flush()
    return id
  }

  const apiSockets = new Set<net.Socket>()
  api.on("connection", (s) => {
    apiSockets.add(s)
    s.on("close", () => apiSockets.delete(s))
  })
  let apiPort = 0
  const listen = () => new Promise<void>((resolve) => api.listen(apiPort, "127.0.0.1", () => {
    apiPort = (api.address() as AddressInfo).port
    resolve()
  }))
  await listen()
  let retries = new Map<string, number>()

  const fake: FakeSlack = {
    historyPageSize: 100,
    apiUrl: `http://127.0.0.1:${apiPort}/api/`,
    botToken,
    appToken,
    botUserId,
    say: ({ channel, user, text, channelType, threadTs, parentUserId, lost, files }) => {
      const ts = `${++clock}.${String(++seq).padStart(6, "0")}`
      const eventId = `Ev${String(seq).padStart(8, "0")}`
      const shared = files?.map((f) => {
        const id = `F${String(++seq).padStart(8, "0")}`
        const path = `/files-pri/T0001-${id}/download/${encodeURIComponent(f.name)}`
        if (f.redirectTo !== undefined) hosted.set(path, { redirectTo: f.redirectTo })
        else if (f.bytes !== undefined) hosted.set(path, f.bytes)
        const url = f.url ?? `http://127.0.0.1:${apiPort}${path}`
        return {
          id, name: f.name, title: f.name, mimetype: f.mimetype ?? "application/octet-stream", filetype: f.name.split(".").pop() ?? "",
          size: f.size ?? f.bytes?.byteLength ?? 0, mode: "hosted", is_external: false,
          url_private: url, url_private_download: url
        }
      })
      const event = {
        type: "message",
        ...(shared !== undefined ? { subtype: "file_share", files: shared } : {}),
        channel,
        channel_type: channelType ?? (channel.startsWith("D") ? "im" : "channel"),
        user: user ?? "UUSER001",
        text,
        ts,
        event_ts: ts,
        ...(threadTs !== undefined ? { thread_ts: threadTs } : {}),
        ...(parentUserId !== undefined ? { parent_user_id: parentUserId } : {})
      }
      const body = { token: "verification", team_id: "T0001", api_app_id: "A0001", type: "event_callback", event_id: eventId, event_time: clock, event }
      const { channel: _in, channel_type: _type, ...kept } = event
      remember(channel, { ...kept, type: "message" })
      if (lost !== true) envelope(body, eventId, 0)
      return { eventId, ts, body }
    },
    uploads: (channel, threadTs) => uploaded.filter((u) => u.channel === channel && (threadTs === undefined || u.threadTs === threadTs)),
    downloads: () => fetched,
    sendBody: (body) => envelope(body, undefined, 0),
    redeliver: (event) => {
      const n = (retries.get(event.eventId) ?? 0) + 1
      retries = retries.set(event.eventId, n)
      envelope(event.body, event.eventId, n)
    },
    acked: () => acks,
    envelopeOf: (eventId) => envelopes.get(eventId),
    posted: (channel, threadTs) => posts.filter((p) => p.channel === channel && (threadTs === undefined || p.threadTs === threadTs)),
    awaitPost: (channel, text) =>
      new Promise<void>((resolve) => {
        const watch = (p: Posted) => {
          if (p.channel !== channel || p.text !== text) return
          postWatchers.delete(watch)
          resolve()
        }
        postWatchers.add(watch)
      }),
    calls: (method) => times.get(method)?.length ?? 0,
    rateLimitNext: (method, n, retryAfter, skip = 0, channel) => void limits.set(method, { times: n, retryAfter, skip, channel }),
    callTimes: (method) => times.get(method) ?? [],
    connections: () => [...sockets].filter((s) => s.readyState === s.OPEN).length,
    dropSockets: () => {
      for (const s of sockets) s.terminate()
    },
    refresh: () => {
      for (const s of sockets) s.send(JSON.stringify({ type: "disconnect", reason: "refresh_requested" }))
    },
    down: async () => {
      await new Promise<void>((resolve) => {
        api.close(() => resolve())
        for (const s of apiSockets) s.destroy()
      })
      for (const s of sockets) s.terminate()
    },
    up: listen,
    stop: async () => {
      for (const s of sockets) s.terminate()
      await new Promise<void>((resolve) => wss.close(() => resolve()))
      await new Promise<void>((resolve) => {
        api.close(() => resolve())
        for (const s of apiSockets) s.destroy()
      })
      void wsPort
    }
  }
  return fake
}
