/**
 * The `telegram-test-api` emulator (a real Bot API server in this process), behind a small front
 * that adds what the emulator leaves out and the runtime depends on, as the Bot API documents it:
 *
 * - getUpdates honours `offset` (an update is kept until a later call confirms it with a higher
 *   offset; a negative offset keeps the newest ones) and long-polls up to `timeout` seconds; the
 *   emulator alone hands an update out once and answers at once;
 * - sendChatAction is answered and recorded (the emulator does not know it);
 * - files, which the emulator does not know either: getFile and the file URL
 *   (`/file/bot<token>/<file_path>`) serve what a test added with `addFile`, and sendDocument
 *   (multipart, like sendVoice) keeps what the bot sent;
 * - faults on demand: a 429 with `retry_after` for the next calls of a method, raw updates
 *   (malformed, unknown types), and an outage (the front stops listening: connection refused);
 * - webhooks as the Bot API documents them (the emulator only POSTs once, without the secret, and
 *   throws on a failure): setWebhook / deleteWebhook (`drop_pending_updates`) / getWebhookInfo
 *   (url, pending_update_count, last_error_*), getUpdates refused with 409 while a webhook is set,
 *   and delivery of the pending updates to the url, one request at a time in update id order (as
 *   with max_connections 1), with `X-Telegram-Bot-Api-Secret-Token`; an update is kept and posted
 *   again (after `webhookRetryMs`) until the url answers 2xx.
 *
 * Everything else (getMe, sendMessage) is the emulator's. Users send through the emulator's
 * client; what the bot sent is read from its store.
 */
import { Either } from "effect"
import * as http from "node:http"
import * as net from "node:net"
import type { AddressInfo } from "node:net"
import { TelegramServer } from "telegram-test-api/lib/telegramServer.js"
import { decodeConfig } from "../../src/config/HostConfig.js"

export interface FakeUser {
  readonly chatId: number
  /** Sends a text as this user in this chat (a private chat unless made with `type: "group"`). */
  readonly say: (text: string) => Promise<void>
}

export interface Telegram {
  readonly apiRoot: string
  readonly token: string
  readonly server: TelegramServer
  readonly user: (options: { readonly chatId: number; readonly userId?: number; readonly userName?: string; readonly type?: "private" | "group" }) => FakeUser
  /** The texts the bot sent to a chat, oldest first, MarkdownV2 escapes removed. */
  readonly sent: (chatId: number) => ReadonlyArray<string>
  /** The raw texts and parse modes the bot sent to a chat. */
  readonly sentRaw: (chatId: number) => ReadonlyArray<{ readonly text: string; readonly parseMode: string | undefined }>
  readonly chatActions: (chatId: number) => ReadonlyArray<string>
  /**
   * The voice notes the bot sent to a chat (the files of its multipart `sendVoice` calls). The
   * emulator has no `sendVoice`: this front answers it as the Bot API does and keeps the file.
   */
  readonly voices: (chatId: number) => ReadonlyArray<Uint8Array>
  /** The documents the bot sent to a chat (the files of its multipart `sendDocument` calls), with their file names. */
  readonly documents: (chatId: number) => ReadonlyArray<{ readonly name: string; readonly bytes: Uint8Array }>
  /** Makes a file the Bot API serves (a user's upload): its file_id for an injected update. */
  readonly addFile: (bytes: Uint8Array) => string
  /** The file paths downloaded through the file URL. */
  readonly downloads: () => ReadonlyArray<string>
  /** After `skip` calls, the next `times` calls of `method` answer 429 with `retry_after` seconds. */
  readonly floodNext: (method: string, times: number, retryAfterSeconds: number, skip?: number) => void
  /** When each call of `method` arrived (performance.now()), and when each 429 was answered. */
  readonly callTimes: (method: string) => ReadonlyArray<{ readonly at: number; readonly flooded: boolean }>
  /** Queues a raw update (any shape) for the bot, with the next update id unless it has one. */
  readonly inject: (update: Record<string, unknown>) => number
  readonly calls: (method: string) => number
  /** The webhook set (its url and secret), or none. */
  readonly webhook: () => { readonly url: string; readonly secret: string | undefined } | undefined
  /**
   * Each webhook POST: the update id and the status answered; 0 when there was no answer, with the
   * error code (ECONNREFUSED: nothing listened; another code, such as UND_ERR_SOCKET: the request
   * was cut off after it reached the listener).
   */
  readonly webhookPosts: () => ReadonlyArray<{ readonly updateId: number; readonly status: number; readonly code?: string }>
  /** The updates the webhook url took (answered 2xx), as posted. */
  readonly webhookDelivered: () => ReadonlyArray<Record<string, unknown> & { readonly update_id: number }>
  /** The front stops listening (the Bot API is unreachable) until `up`. */
  readonly down: () => Promise<void>
  readonly up: () => Promise<void>
  readonly stop: () => Promise<void>
}

export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const s = net.createServer()
    s.once("error", reject)
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as AddressInfo).port
      s.close(() => resolve(port))
    })
  })

const unescape = (s: string) => s.replace(/\\([\s\S])/g, "$1")

/** The parts of a multipart/form-data body by name (grammy's uploads; undici cannot parse its stream's framing). */
const multipart = (body: Buffer, contentType: string, filenames?: Map<string, string>): Map<string, Buffer> => {
  const parts = new Map<string, Buffer>()
  const boundary = /boundary=("?)([^";]+)\1/.exec(contentType)?.[2]
  if (boundary === undefined) return parts
  const delimiter = Buffer.from(`--${boundary}`)
  let at = body.indexOf(delimiter)
  while (at >= 0) {
    const next = body.indexOf(delimiter, at + delimiter.length)
    if (next < 0) break
    const part = body.subarray(at + delimiter.length, next)
    const headerEnd = part.indexOf("\r\n\r\n")
    const head = part.subarray(0, headerEnd).toString("utf8")
    const name = /\bname="([^"]+)"/.exec(head)?.[1]
    const filename = /filename="?([^"\r\n;]*)"?/.exec(head)?.[1]
    if (name !== undefined && filename !== undefined) filenames?.set(name, filename)
    // The content ends before the CRLF that precedes the next delimiter.
    if (headerEnd >= 0 && name !== undefined) parts.set(name, part.subarray(headerEnd + 4, part.length - 2))
    at = next
  }
  return parts
}

export const startTelegram = async (token = "123456:TEST-token", options: { readonly webhookRetryMs?: number } = {}): Promise<Telegram> => {
  const emulatorPort = await freePort()
  const server = new TelegramServer({ port: emulatorPort, host: "127.0.0.1", storeTimeout: 3600 })
  await server.start()
  const emulator = server.config.apiURL
  let pending: Array<Record<string, unknown> & { update_id: number }> = []
  const actions: Array<{ chatId: string; action: string }> = []
  const voices: Array<{ chatId: string; bytes: Uint8Array }> = []
  let voiceIds = 1_000_000
  const documents: Array<{ chatId: string; name: string; bytes: Uint8Array }> = []
  const files = new Map<string, { path: string; bytes: Uint8Array }>()
  const downloads: Array<string> = []
  const floods = new Map<string, { times: number; retryAfter: number; skip: number }>()
  const times = new Map<string, Array<{ at: number; flooded: boolean }>>()
  let hook: { url: string; secret: string | undefined } | undefined
  let lastError: { date: number; message: string } | undefined
  const posts: Array<{ updateId: number; status: number; code?: string }> = []
  const delivered: Array<Record<string, unknown> & { update_id: number }> = []
  let delivering = false
  let retryTimer: NodeJS.Timeout | undefined
  let stopped = false

  const pull = () => {
    for (const u of server.getUpdates(token) as Array<Record<string, unknown> & { update_id: number }>) pending.push(u)
    pending.sort((a, b) => a.update_id - b.update_id)
  }
  const waitForUpdate = (ms: number, req: http.IncomingMessage) =>
    new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer)
        server.off("AddedUserMessage", done)
        server.off("injected", done)
        req.off("close", done)
        resolve()
      }
      const timer = setTimeout(done, ms)
      server.on("AddedUserMessage", done)
      server.on("injected", done)
      req.on("close", done)
    })

  /** Posts the pending updates to the webhook, oldest first, one at a time; stops at the first failure and tries again later. */
  const deliver = async () => {
    if (delivering || hook === undefined || stopped) return
    delivering = true
    try {
      pull()
      while (hook !== undefined && pending.length > 0 && !stopped) {
        const update = pending[0]!
        const target = hook
        let status = 0
        let code: string | undefined
        try {
          const r = await fetch(target.url, {
            method: "POST",
            headers: { "content-type": "application/json", ...(target.secret !== undefined ? { "x-telegram-bot-api-secret-token": target.secret } : {}) },
            body: JSON.stringify(update)
          })
          status = r.status
          await r.arrayBuffer()
        } catch (e) {
          code = (e as { cause?: { code?: string } }).cause?.code ?? "error"
          lastError = { date: Math.floor(Date.now() / 1000), message: `Connection failed: ${code}` }
        }
        posts.push({ updateId: update.update_id, status, ...(code !== undefined ? { code } : {}) })
        if (status >= 200 && status < 300) {
          pending = pending.filter((u) => u.update_id !== update.update_id)
          delivered.push(update)
        } else {
          if (status !== 0) lastError = { date: Math.floor(Date.now() / 1000), message: `Wrong response from the webhook: ${status} ${http.STATUS_CODES[status] ?? ""}`.trim() }
          clearTimeout(retryTimer)
          retryTimer = setTimeout(() => void deliver(), options.webhookRetryMs ?? 100)
          return
        }
        pull()
      }
    } finally {
      delivering = false
    }
  }
  server.on("AddedUserMessage", () => setImmediate(() => void deliver()))
  server.on("injected", () => void deliver())

  const answer = (res: http.ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { "content-type": "application/json" })
    res.end(JSON.stringify(body))
  }

  const getUpdates = async (params: Record<string, unknown>, req: http.IncomingMessage, res: http.ServerResponse) => {
    const offset = Number(params["offset"] ?? 0)
    const timeout = Number(params["timeout"] ?? 0)
    const limit = Number(params["limit"] ?? 100)
    pull()
    if (offset < 0) pending = pending.slice(offset)
    else if (offset > 0) pending = pending.filter((u) => u.update_id >= offset)
    if (pending.length === 0 && timeout > 0) {
      await waitForUpdate(timeout * 1000, req)
      // Let the emulator finish storing the update that woke us.
      await new Promise((r) => setImmediate(r))
      pull()
    }
    answer(res, 200, { ok: true, result: pending.slice(0, limit) })
  }

  const forward = async (method: string, body: Buffer, req: http.IncomingMessage, res: http.ServerResponse) => {
    const r = await fetch(`${emulator}/bot${token}/${method}`, {
      method: req.method ?? "POST",
      headers: { "content-type": req.headers["content-type"] ?? "application/json" },
      ...(req.method === "GET" ? {} : { body })
    })
    res.writeHead(r.status, { "content-type": "application/json" })
    res.end(Buffer.from(await r.arrayBuffer()))
  }

  const front = http.createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const file = /^\/file\/bot([^/]+)\/(.+)$/.exec(req.url ?? "")
      if (file !== null) {
        const found = [...files.values()].find((f) => f.path === file[2])
        if (file[1] !== token || found === undefined) return answer(res, 404, { ok: false, error_code: 404, description: "Not Found" })
        downloads.push(found.path)
        res.writeHead(200, { "content-type": "application/octet-stream" })
        return res.end(Buffer.from(found.bytes))
      }
      const match = /^\/bot([^/]+)\/(\w+)/.exec(req.url ?? "")
      if (match === null) return answer(res, 404, { ok: false, error_code: 404, description: "Not Found" })
      const method = match[2]!
      const calls = times.get(method) ?? []
      times.set(method, calls)
      const call = { at: performance.now(), flooded: false }
      calls.push(call)
      const body = Buffer.concat(chunks)
      const params = body.length > 0 && (req.headers["content-type"] ?? "").includes("json") ? JSON.parse(body.toString("utf8")) as Record<string, unknown> : {}
      if (match[1] !== token) return answer(res, 401, { ok: false, error_code: 401, description: "Unauthorized" })
      const flood = floods.get(method)
      if (flood !== undefined && flood.skip > 0) flood.skip -= 1
      else if (flood !== undefined && flood.times > 0) {
        flood.times -= 1
        call.flooded = true
        return answer(res, 429, { ok: false, error_code: 429, description: `Too Many Requests: retry after ${flood.retryAfter}`, parameters: { retry_after: flood.retryAfter } })
      }
      const dropPending = () => {
        pull()
        pending = []
      }
      const work = method === "getUpdates"
        ? hook !== undefined
          ? Promise.resolve().then(() => answer(res, 409, { ok: false, error_code: 409, description: "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first" }))
          : getUpdates(params, req, res)
        : method === "setWebhook"
        ? Promise.resolve().then(() => {
          const url = params["url"]
          if (typeof url !== "string" || url === "") return answer(res, 400, { ok: false, error_code: 400, description: "Bad Request: bad webhook: An HTTPS URL must be provided for webhook" })
          if (params["drop_pending_updates"] === true) dropPending()
          hook = { url, secret: typeof params["secret_token"] === "string" ? params["secret_token"] : undefined }
          answer(res, 200, { ok: true, result: true, description: "Webhook was set" })
          void deliver()
        })
        : method === "deleteWebhook"
        ? Promise.resolve().then(() => {
          if (params["drop_pending_updates"] === true) dropPending()
          const had = hook !== undefined
          hook = undefined
          clearTimeout(retryTimer)
          answer(res, 200, { ok: true, result: true, description: had ? "Webhook was deleted" : "Webhook is already deleted" })
        })
        : method === "getWebhookInfo"
        ? Promise.resolve().then(() => {
          pull()
          answer(res, 200, {
            ok: true,
            result: {
              url: hook?.url ?? "",
              has_custom_certificate: false,
              pending_update_count: pending.length,
              ...(hook !== undefined && lastError !== undefined ? { last_error_date: lastError.date, last_error_message: lastError.message } : {})
            }
          })
        })
        : method === "sendChatAction"
        ? Promise.resolve().then(() => {
          actions.push({ chatId: String(params["chat_id"]), action: String(params["action"]) })
          answer(res, 200, { ok: true, result: true })
        })
        : method === "sendVoice"
        ? Promise.resolve().then(() => {
          const form = multipart(body, req.headers["content-type"] ?? "")
          // grammy names the file part in the field: `attach://<part name>`.
          const field = form.get("voice")?.toString("utf8")
          const voice = field?.startsWith("attach://") ? form.get(field.slice("attach://".length)) : form.get("voice")
          const chatId = form.get("chat_id")?.toString("utf8")
          if (voice === undefined || chatId === undefined) return answer(res, 400, { ok: false, error_code: 400, description: "Bad Request: voice must be an uploaded file" })
          voices.push({ chatId, bytes: new Uint8Array(voice) })
          answer(res, 200, { ok: true, result: { message_id: voiceIds++, date: 0, chat: { id: Number(chatId), type: "private" }, voice: { file_id: `voice-${voiceIds}`, duration: 1 } } })
        })
        : method === "getFile"
        ? Promise.resolve().then(() => {
          const f = files.get(String(params["file_id"]))
          if (f === undefined) return answer(res, 400, { ok: false, error_code: 400, description: "Bad Request: invalid file_id" })
          answer(res, 200, { ok: true, result: { file_id: String(params["file_id"]), file_unique_id: String(params["file_id"]), file_size: f.bytes.byteLength, file_path: f.path } })
        })
        : method === "sendDocument"
        ? Promise.resolve().then(() => {
          const names = new Map<string, string>()
          const form = multipart(body, req.headers["content-type"] ?? "", names)
          const field = form.get("document")?.toString("utf8")
          const part = field?.startsWith("attach://") ? field.slice("attach://".length) : "document"
          const document = form.get(part)
          const chatId = form.get("chat_id")?.toString("utf8")
          if (document === undefined || chatId === undefined) return answer(res, 400, { ok: false, error_code: 400, description: "Bad Request: document must be an uploaded file" })
          documents.push({ chatId, name: names.get(part) ?? "", bytes: new Uint8Array(document) })
          answer(res, 200, { ok: true, result: { message_id: voiceIds++, date: 0, chat: { id: Number(chatId), type: "private" }, document: { file_id: `doc-${voiceIds}`, file_unique_id: `doc-${voiceIds}` } } })
        })
        : forward(method, body, req, res)
      work.catch((e: unknown) => answer(res, 500, { ok: false, error_code: 500, description: String(e) }))
    })
  })
  const frontPort = await freePort()
  const sockets = new Set<net.Socket>()
  front.on("connection", (s) => {
    sockets.add(s)
    s.on("close", () => sockets.delete(s))
  })
  const listen = () => new Promise<void>((resolve, reject) => {
    front.once("error", reject)
    front.listen(frontPort, "127.0.0.1", () => {
      front.off("error", reject)
      resolve()
    })
  })
  const close = () => new Promise<void>((resolve) => {
    front.close(() => resolve())
    for (const s of sockets) s.destroy()
  })
  await listen()

  const botMessages = (chatId: number) =>
    server.storage.botMessages.filter((m) => m.botToken === token && String((m.message as { chat_id?: unknown }).chat_id) === String(chatId))

  return {
    apiRoot: `http://127.0.0.1:${frontPort}`,
    token,
    server,
    user: ({ chatId, type, userId, userName }) => {
      const client = server.getClient(token, { chatId, userId: userId ?? chatId, userName: userName ?? `user${chatId}`, type: type ?? "private", chatTitle: `chat ${chatId}` })
      return {
        chatId,
        say: async (text) => {
          await client.sendMessage(client.makeMessage(text))
        }
      }
    },
    sent: (chatId) => botMessages(chatId).map((m) => {
      const message = m.message as { text: string; parse_mode?: string }
      return message.parse_mode === "MarkdownV2" ? unescape(message.text) : message.text
    }),
    sentRaw: (chatId) => botMessages(chatId).map((m) => {
      const message = m.message as { text: string; parse_mode?: string }
      return { text: message.text, parseMode: message.parse_mode }
    }),
    chatActions: (chatId) => actions.filter((a) => a.chatId === String(chatId)).map((a) => a.action),
    voices: (chatId) => voices.filter((v) => v.chatId === String(chatId)).map((v) => v.bytes),
    documents: (chatId) => documents.filter((d) => d.chatId === String(chatId)).map((d) => ({ name: d.name, bytes: d.bytes })),
    addFile: (bytes) => {
      const id = `file-${files.size + 1}`
      files.set(id, { path: `documents/${id}.bin`, bytes })
      return id
    },
    downloads: () => downloads,
    floodNext: (method, n, retryAfterSeconds, skip = 0) => void floods.set(method, { times: n, retryAfter: retryAfterSeconds, skip }),
    callTimes: (method) => times.get(method) ?? [],
    inject: (update) => {
      // The emulator's own counter (private in its types), so injected and real updates interleave in order.
      const counter = server as unknown as { updateId: number }
      const id = typeof update["update_id"] === "number" ? update["update_id"] : counter.updateId++
      pending.push({ ...update, update_id: id })
      pending.sort((a, b) => a.update_id - b.update_id)
      server.emit("injected")
      return id
    },
    calls: (method) => times.get(method)?.length ?? 0,
    webhook: () => hook,
    webhookPosts: () => posts,
    webhookDelivered: () => delivered,
    down: close,
    up: listen,
    stop: async () => {
      stopped = true
      clearTimeout(retryTimer)
      await close()
      await server.stop()
    }
  }
}

/** A host config whose one workspace takes every chat of the connection `tg`. */
export const telegramHostConfig = (dir: string) =>
  Either.getOrThrow(decodeConfig({
    dataDir: dir,
    workspaces: [{ id: "main", instructions: "test" }],
    routes: [{ connection: "tg", place: "*", workspace: "main" }],
    connections: {},
    limits: { runtimeReadyTimeoutMs: 20_000, readinessCheckMs: 100 }
  }, "test config"))
