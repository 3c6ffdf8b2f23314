/** HTTP to the LLM gateway over its unix socket, with the turn token; nothing else is reachable. */
import * as http from "node:http"
import { CoreFailed } from "./cores/types.js"

export interface GatewayClient {
  /** The gateway's socket inside the sandbox, for a core that brings its own client (Claude Code). */
  readonly socketPath: string
  /** This turn's token, for such a client (as its bearer key); never write it to a file. */
  readonly token: string
  /** POSTs JSON and returns the decoded answer; a non-2xx answer is a CoreFailed with the gateway's code. */
  readonly post: (path: string, body: unknown, headers?: Record<string, string>) => Promise<unknown>
  /**
   * POSTs JSON asking for a stream and calls `onEvent` with each server-sent event as it arrives;
   * resolves when the stream ends. A non-2xx answer is the same CoreFailed as `post`'s.
   */
  readonly stream: (path: string, body: unknown, onEvent: (event: SseEvent) => void, headers?: Record<string, string>) => Promise<void>
}

export interface SseEvent {
  /**
   * The `event:` field; "message" when absent. An answer that is not a stream (an upstream that
   * ignores `stream: true`) comes as one event named "json" holding the whole body.
   */
  readonly event: string
  readonly data: string
}

/** Splits a text stream into server-sent events (fields `event` and `data`; comments and ids ignored). */
export const sseParser = (onEvent: (event: SseEvent) => void) => {
  let buffer = ""
  let event = ""
  let data: Array<string> = []
  const line = (l: string) => {
    if (l === "") {
      if (data.length > 0) onEvent({ event: event === "" ? "message" : event, data: data.join("\n") })
      event = ""
      data = []
    } else if (l.startsWith("data:")) data.push(l.slice(l[5] === " " ? 6 : 5))
    else if (l.startsWith("event:")) event = l.slice(l[6] === " " ? 7 : 6).trim()
  }
  return {
    push: (chunk: string) => {
      buffer += chunk
      let nl: number
      while ((nl = buffer.indexOf("\n")) >= 0) {
        line(buffer.slice(0, nl).replace(/\r$/, ""))
        buffer = buffer.slice(nl + 1)
      }
    },
    end: () => {
      if (buffer !== "") line(buffer.replace(/\r$/, ""))
      buffer = ""
      line("")
    }
  }
}

/** Text from the wire as one printable line. */
const oneLine = (text: string) => text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, " ").trim()

const failureOf = (status: number, body: string): CoreFailed => {
  let code = `gateway_${status}`
  let message: string | undefined
  try {
    const parsed = JSON.parse(body) as { error?: { code?: unknown; type?: unknown; message?: unknown } }
    const c = parsed.error?.code ?? parsed.error?.type
    if (typeof c === "string" && /^[a-z0-9_]{1,60}$/.test(c)) code = c
    if (typeof parsed.error?.message === "string") message = parsed.error.message.slice(0, 300)
  } catch {
    // not JSON
  }
  // A used-up budget is the gateway's own answer (no upstream text): it is what the user is told,
  // and retrying before the budget resets cannot help.
  if (code === "budget_exceeded") return new CoreFailed(code, message ?? "the token budget is used up", false)
  const retryable = status === 429 || status >= 500
  // The gateway's own message names the cause (a provider unreachable, and why); the user sees it.
  return new CoreFailed(code, `the LLM gateway answered ${status}${message !== undefined ? `: ${oneLine(message)}` : ""}`, retryable)
}

const request = (socketPath: string, token: string, path: string, body: unknown, headers: Record<string, string>, onResponse: (res: http.IncomingMessage) => void, reject: (e: CoreFailed) => void) => {
  const payload = Buffer.from(JSON.stringify(body))
  const req = http.request({
    socketPath,
    path,
    method: "POST",
    agent: false,
    headers: {
      "content-type": "application/json",
      "content-length": payload.length,
      authorization: `Bearer ${token}`,
      ...headers
    }
  }, onResponse)
  req.on("error", () => reject(new CoreFailed("gateway_unreachable", "cannot reach the LLM gateway socket", true)))
  req.end(payload)
}

/** Reads a whole body (an error body: at most `max` bytes of it). */
const readBody = (res: http.IncomingMessage, done: (text: string) => void, max = 16 * 1024 * 1024) => {
  const chunks: Array<Buffer> = []
  let size = 0
  res.on("data", (c: Buffer) => {
    if (size < max) chunks.push(c)
    size += c.length
  })
  res.on("end", () => done(Buffer.concat(chunks).toString("utf8")))
}

export const makeGatewayClient = (socketPath: string, token: string): GatewayClient => ({
  socketPath,
  token,
  stream: (path, body, onEvent, headers = {}) =>
    new Promise((resolve, reject) => {
      request(socketPath, token, path, body, { accept: "text/event-stream", ...headers }, (res) => {
        const status = res.statusCode ?? 0
        res.on("error", () => reject(new CoreFailed("gateway_unreachable", "the gateway connection broke", true)))
        if (status < 200 || status >= 300) return readBody(res, (text) => reject(failureOf(status, text)), 65_536)
        if (!String(res.headers["content-type"] ?? "").startsWith("text/event-stream")) {
          return readBody(res, (text) => {
            try {
              onEvent({ event: "json", data: text })
              resolve()
            } catch (err) {
              reject(err instanceof CoreFailed ? err : new CoreFailed("gateway_bad_answer", "the gateway answer is not JSON", true))
            }
          })
        }
        const parser = sseParser((e) => {
          try {
            onEvent(e)
          } catch (err) {
            res.destroy()
            reject(err instanceof CoreFailed ? err : new CoreFailed("llm_bad_answer", "the stream held an event the core cannot read", true))
          }
        })
        res.setEncoding("utf8")
        res.on("data", (c: string) => parser.push(c))
        res.on("close", () => {
          if (!res.complete) reject(new CoreFailed("stream_interrupted", "the stream from the gateway broke off", true))
        })
        res.on("end", () => {
          parser.end()
          resolve()
        })
      }, reject)
    }),
  post: (path, body, headers = {}) =>
    new Promise((resolve, reject) => {
      request(socketPath, token, path, body, headers, (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (c: Buffer) => chunks.push(c))
        res.on("error", () => reject(new CoreFailed("gateway_unreachable", "the gateway connection broke", true)))
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8")
          const status = res.statusCode ?? 0
          if (status < 200 || status >= 300) return reject(failureOf(status, text))
          try {
            resolve(JSON.parse(text))
          } catch {
            reject(new CoreFailed("gateway_bad_answer", "the gateway answer is not JSON", true))
          }
        })
      }, reject)
    })
})
