/** HTTP to the LLM gateway over its unix socket, with the turn token; nothing else is reachable. */
import * as http from "node:http"
import { CoreFailed } from "./cores/types.js"

export interface GatewayClient {
  /** POSTs JSON and returns the decoded answer; a non-2xx answer is a CoreFailed with the gateway's code. */
  readonly post: (path: string, body: unknown, headers?: Record<string, string>) => Promise<unknown>
}

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
  return new CoreFailed(code, `the LLM gateway answered ${status}`, retryable)
}

export const makeGatewayClient = (socketPath: string, token: string): GatewayClient => ({
  post: (path, body, headers = {}) =>
    new Promise((resolve, reject) => {
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
      }, (res) => {
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
      })
      req.on("error", () => reject(new CoreFailed("gateway_unreachable", "cannot reach the LLM gateway socket", true)))
      req.end(payload)
    })
})
