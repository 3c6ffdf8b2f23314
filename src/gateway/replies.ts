/**
 * The gateway's own answers to a client (errors, health, the model list), in the dialect of the
 * endpoint it called. Every name a client sent is shown back through `shown`, never raw.
 */
import type * as http from "node:http"
import type { Api } from "./catalog.js"
import { redactText } from "./redact.js"

/** An error body in the dialect of the endpoint asked (Anthropic or OpenAI). */
export const errorJson = (api: Api | "models", type: string, message: string): string =>
  api === "messages"
    ? JSON.stringify({ type: "error", error: { type, message } })
    : JSON.stringify({ error: { message, type, code: type } })

/** A JSON answer; once headers went out no answer fits, so the connection is cut instead. */
export const send = (res: http.ServerResponse, status: number, body: string, extra?: Record<string, string>) => {
  if (res.headersSent) {
    res.destroy()
    return
  }
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body), ...extra })
  res.end(body)
}

/** The SSE event that ends a stream the upstream broke after bytes reached the client. */
export const streamErrorEvent = (api: Api): string =>
  api === "messages"
    ? `event: error\ndata: ${JSON.stringify({ type: "error", error: { type: "api_error", message: "the upstream connection failed mid-stream" } })}\n\n`
    : `data: ${JSON.stringify({ error: { message: "the upstream connection failed mid-stream", type: "upstream_error", code: "stream_interrupted" } })}\n\n`

/** Names the client sent, shown back safely. */
export const shown = (s: string, known: ReadonlyArray<string>) => redactText(s.length > 120 ? `${s.slice(0, 120)}...` : s, known)
