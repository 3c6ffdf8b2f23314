/**
 * Guessing the Control UI's token, against the real host (the built bin) and its UI server:
 * failed logins are limited per client (remote address; the test's clients are loopback
 * addresses 127.0.0.x, which all reach the server on 127.0.0.1) and overall, with the defaults
 * (5 per client, 50 overall, per minute). A limited client gets 429 with Retry-After and the wait
 * on the page, even with the right token; another client still logs in, and its success resets
 * nobody's count.
 */
import { afterAll, assert, describe, it } from "vitest"
import * as fs from "node:fs"
import * as http from "node:http"
import * as path from "node:path"
import { hashToken } from "../../src/config/token-hashes.js"
import { killAllHosts, startHost, stopHost } from "../channels/host-process.js"
import { tempDir } from "../support/db.js"
import { freePort } from "../support/synapse.js"

const TOKEN = "correct horse battery staple"

interface Answer {
  readonly status: number
  readonly retryAfter: string | undefined
  readonly cookie: boolean
  readonly body: string
}

/** POST /login from the loopback address `from` (the server listens on 127.0.0.1 only). */
const login = (port: number, token: string, from: string) =>
  new Promise<Answer>((resolve, reject) => {
    const body = `token=${encodeURIComponent(token)}`
    const req = http.request({
      host: "127.0.0.1", port, path: "/login", method: "POST", localAddress: from, agent: false,
      headers: { origin: `http://127.0.0.1:${port}`, "content-type": "application/x-www-form-urlencoded", "content-length": Buffer.byteLength(body) }
    }, (res) => {
      let text = ""
      res.setEncoding("utf8").on("data", (d: string) => (text += d)).on("end", () =>
        resolve({ status: res.statusCode ?? 0, retryAfter: res.headers["retry-after"], cookie: res.headers["set-cookie"] !== undefined, body: text }))
    })
    req.once("error", reject)
    req.end(body)
  })

afterAll(killAllHosts)

describe("Control UI login: failed guesses are limited (real host)", () => {
  it("5 failures per client and 50 overall per minute; then 429 with the wait, even for the right token; a success resets nobody", { timeout: 120_000 }, async () => {
    const dir = tempDir()
    const port = await freePort()
    fs.writeFileSync(path.join(dir, "pynchy.yaml"), [
      `dataDir: ${JSON.stringify(path.join(dir, "data"))}`,
      "containerRuntime: process",
      `ui: { port: ${port}, tokens: ['${hashToken(TOKEN)}'] }`
    ].join("\n") + "\n")
    const host = await startHost(dir)
    try {
      const limited = (a: Answer, what: string) => {
        assert.strictEqual(a.status, 429, what)
        const wait = Number(a.retryAfter)
        assert.isTrue(Number.isInteger(wait) && wait >= 1 && wait <= 60, `${what}: Retry-After ${a.retryAfter}`)
        assert.include(a.body, `try again in ${wait} s`, what)
        assert.isFalse(a.cookie, what)
      }
      for (let i = 1; i <= 5; i++) assert.strictEqual((await login(port, `guess ${i}`, "127.0.0.1")).status, 401, `guess ${i}`)
      limited(await login(port, "guess 6", "127.0.0.1"), "the 6th guess from one client")
      // While limited, the right token is not even tried: a guess that happens to be right tells nothing.
      limited(await login(port, TOKEN, "127.0.0.1"), "the right token from the limited client")

      // Another client is not limited by the first one's failures, and its success resets nobody.
      const other = await login(port, TOKEN, "127.0.0.2")
      assert.deepStrictEqual([other.status, other.cookie], [303, true])
      limited(await login(port, "guess 7", "127.0.0.1"), "the first client after another's success")

      // Overall: 45 more failures from 9 more clients make 50 in the minute; then every client waits.
      for (let c = 3; c <= 11; c++) {
        for (let i = 1; i <= 5; i++) assert.strictEqual((await login(port, `guess ${c}.${i}`, `127.0.0.${c}`)).status, 401, `client ${c} guess ${i}`)
      }
      limited(await login(port, "guess", "127.0.0.12"), "a fresh client past the overall limit")
      limited(await login(port, TOKEN, "127.0.0.2"), "the right token past the overall limit")
      assert.match(host.stderr(), /control ui: logins refused for a while/)
    } finally {
      await stopHost(host)
    }
  })
})
