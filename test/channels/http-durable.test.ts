/**
 * The HTTP API's replies come from the durable record: the real host (the built bin) is stopped
 * and started again on the same data dir, and `replies?after=0` still lists the reply delivered
 * before the restart, with the same id; the stream replays it too. A token reads only the
 * replies to its own messages.
 */
import { afterAll, assert, describe, it } from "vitest"
import { hashToken } from "../../src/channels/http/settings.js"
import { Effect } from "effect"
import { eventually } from "../support/eventually.js"
import { freePort } from "../support/synapse.js"
import { hostProject, killAllHosts, stopHost } from "./host-process.js"

afterAll(killAllHosts)

const TOKEN = "restart-token"
const OTHER = "other-token"

const get = async (url: string, token: string) => {
  const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } })
  return { status: res.status, body: await res.json() as { replies: Array<{ id: number; key: string; text: string }> } }
}

/** Reads the SSE stream until `n` replies arrived. */
const streamReplies = async (url: string, token: string, n: number) => {
  const abort = new AbortController()
  const res = await fetch(url, { headers: { authorization: `Bearer ${token}` }, signal: abort.signal })
  const reader = res.body!.getReader()
  let text = ""
  while ((text.match(/event: reply/g) ?? []).length < n) {
    const { value, done } = await reader.read()
    if (done) break
    text += new TextDecoder().decode(value)
  }
  abort.abort()
  return [...text.matchAll(/^id: (\d+)\nevent: reply\ndata: (.*)$/gm)].map((m) => ({ id: Number(m[1]), ...JSON.parse(m[2]!) as { text: string } }))
}

describe("HTTP API replies across a host restart (real bin)", () => {
  it("replies?after=0 after a restart lists the reply delivered before it; another token is refused the place (place_owned)", async () => {
    const port = await freePort()
    const project = hostProject({
      yaml: () => [
        "workspaces: [{ id: main, agentCore: scripted }]",
        "routes: [{ connection: web, place: '*', workspace: main }]",
        `connections: { web: { kind: http, port: ${port}, tokens: ['${hashToken(TOKEN)}', '${hashToken(OTHER)}'] } }`
      ]
    })
    const base = `http://127.0.0.1:${port}/v1/conversations/room`
    let host = await project.start()
    let before: Array<{ id: number; key: string; text: string }>
    try {
      const posted = await fetch(`${base}/messages`, {
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}`, "idempotency-key": "m-1" },
        body: JSON.stringify({ text: "before the restart" })
      })
      assert.strictEqual(posted.status, 202)
      before = await Effect.runPromise(eventually(async () => {
        const r = await get(`${base}/replies?after=0`, TOKEN)
        return r.body.replies.length > 0 ? r.body.replies : undefined
      }, { label: "the reply before the restart" }))
      assert.deepStrictEqual(before.map((r) => r.text), ["echo: before the restart"])
    } finally {
      await stopHost(host)
    }
    host = await project.start()
    try {
      const after = await get(`${base}/replies?after=0`, TOKEN)
      assert.strictEqual(after.status, 200)
      assert.deepStrictEqual(after.body.replies, before)
      const streamed = await streamReplies(`${base}/stream`, TOKEN, 1)
      assert.deepStrictEqual(streamed.map((r) => [r.id, r.text]), before.map((r) => [r.id, r.text]))
      // The place belongs to the token that first wrote to it: the other token reads nothing of it
      // and cannot post into it (403 place_owned), after the restart as before.
      const other = await get(`${base}/replies?after=0`, OTHER)
      assert.deepStrictEqual([other.status, (other.body as unknown as { error?: string }).error], [403, "place_owned"])
      const posted = await fetch(`${base}/messages`, { method: "POST", headers: { authorization: `Bearer ${OTHER}` }, body: JSON.stringify({ text: "mine" }) })
      assert.strictEqual(posted.status, 403)
      const first = await get(`${base}/replies?after=0`, TOKEN)
      assert.deepStrictEqual(first.body.replies, before)
    } finally {
      await stopHost(host)
    }
  }, 120_000)
})
