/**
 * A provider the gateway cannot reach: the client's 502 names the provider, the failure and the
 * host (the agent shows it to the user, `trace` puts it in the verdict), and the host log gets one
 * warning per provider per cooldown, not one per attempt of every turn.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Logger, Redacted, TestClock } from "effect"
import { call, drivingClock, provider, startGateway } from "./support.js"

const ask = { model: "g", messages: [{ role: "user", content: "hi" }] }
const HOUR = 3_600_000

describe("an unreachable provider", () => {
  it.scoped("the 502 names the provider and the cause; retries of many requests warn once per cooldown", () => {
    const lines: Array<{ level: string; message: string }> = []
    const capture = Logger.replace(Logger.defaultLogger, Logger.make(({ logLevel, message }) => {
      lines.push({ level: logLevel.label, message: String(Array.isArray(message) ? message.join(" ") : message) })
    }))
    return Effect.gen(function* () {
      // Port 9 (discard) on loopback: nothing listens, every connect is refused at once.
      const gw = yield* startGateway([provider({ name: "gone", baseUrl: "http://127.0.0.1:9/v1", models: ["g"] })], {
        retry: { attempts: 3, baseMs: 10 },
        cooldown: { allowedFails: 100, cooldownMs: 30_000 }
      })
      const { token } = yield* gw.mintToken({ workspace: "main", conversationId: "c", expiresAt: HOUR })
      const send = drivingClock(call({ socketPath: gw.socketPath! }, { path: "/v1/chat/completions", token: Redacted.value(token), body: ask }), 10)
      const first = yield* send
      assert.strictEqual(first.status, 502)
      assert.strictEqual(JSON.parse(first.body).error.message, "provider gone unreachable: ECONNREFUSED 127.0.0.1")
      yield* send
      yield* send
      const warned = () => lines.filter((l) => l.message === "upstream attempt failed" && l.level === "WARN").length
      // Flush the forked log fibers.
      yield* Effect.yieldNow()
      assert.strictEqual(warned(), 1, `warnings: ${JSON.stringify(lines)}`)
      yield* TestClock.adjust(30_000)
      yield* send
      yield* Effect.yieldNow()
      assert.strictEqual(warned(), 2)
    }).pipe(Effect.provide(capture))
  })
})
