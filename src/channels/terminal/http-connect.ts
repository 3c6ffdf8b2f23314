/**
 * `pynchy chat --connect <url>`: the chat talks to a running host through its HTTP API
 * connection: messages are POSTed with an idempotency key, replies come over the SSE stream
 * (resumed with Last-Event-ID after a drop).
 */
import { randomUUID } from "node:crypto"

export interface HttpConversation {
  readonly send: (text: string) => Promise<void>
  /** Streams replies to `onReply` until `stop`; reconnects after a drop, telling `onInfo`. */
  readonly listen: (onReply: (text: string, kind: "reply" | "notice") => void, onInfo: (text: string) => void) => void
  readonly stop: () => void
}

export const connectHttp = (baseUrl: string, token: string, place: string): HttpConversation => {
  const base = `${baseUrl.replace(/\/+$/, "")}/v1/conversations/${encodeURIComponent(place)}`
  const auth = { authorization: `Bearer ${token}` }
  const abort = new AbortController()
  let lastId: string | undefined

  const send = async (text: string) => {
    const key = randomUUID()
    // Retried with the same key: the host stores it once.
    for (let attempt = 0; ; attempt++) {
      try {
        const res = await fetch(`${base}/messages`, { method: "POST", headers: { ...auth, "content-type": "application/json", "idempotency-key": key }, body: JSON.stringify({ text }) })
        if (res.status === 202) return
        const body = (await res.json().catch(() => ({}))) as { error?: string; problems?: Array<{ path: string; reason: string }> }
        throw new Error(res.status === 401 ? "unauthorized (check the token)" : `${res.status} ${body.error ?? ""} ${(body.problems ?? []).map((p) => `${p.path}: ${p.reason}`).join("; ")}`.trim())
      } catch (e) {
        if (attempt >= 2 || (e instanceof Error && !(e instanceof TypeError))) throw e
        await new Promise((r) => setTimeout(r, 300 * (attempt + 1)))
      }
    }
  }

  const listen = (onReply: (text: string, kind: "reply" | "notice") => void, onInfo: (text: string) => void) => {
    const loop = async () => {
      let dropped = false
      while (!abort.signal.aborted) {
        try {
          const res = await fetch(`${base}/stream`, { headers: { ...auth, ...(lastId ? { "last-event-id": lastId } : {}) }, signal: abort.signal })
          if (res.status === 401) return onInfo("the host refused the token")
          if (!res.ok || res.body === null) throw new Error(`stream ${res.status}`)
          if (dropped) onInfo("reconnected")
          dropped = false
          const reader = res.body.getReader()
          const decoder = new TextDecoder()
          let buffer = ""
          while (true) {
            const { value, done } = await reader.read()
            if (done) break
            buffer += decoder.decode(value, { stream: true })
            let end: number
            while ((end = buffer.indexOf("\n\n")) >= 0) {
              const block = buffer.slice(0, end)
              buffer = buffer.slice(end + 2)
              const data = /^data: (.*)$/m.exec(block)?.[1]
              const id = /^id: (.*)$/m.exec(block)?.[1]
              if (id !== undefined) lastId = id
              if (data !== undefined && /^event: reply$/m.test(block)) {
                const reply = JSON.parse(data) as { text: string; kind: "reply" | "notice" }
                onReply(reply.text, reply.kind)
              }
            }
          }
        } catch {
          if (abort.signal.aborted) return
        }
        if (!dropped) onInfo("connection to the host lost; retrying")
        dropped = true
        await new Promise((r) => setTimeout(r, 1_000))
      }
    }
    void loop()
  }

  return { send, listen, stop: () => abort.abort() }
}
