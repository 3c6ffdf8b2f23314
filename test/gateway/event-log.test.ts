import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import * as Database from "../../src/db/Database.js"
import { HostStore } from "../../src/db/HostStore.js"
import * as Stores from "../../src/db/Stores.js"
import { GatewayBudgets, GatewayConfig } from "../../src/config/gateway.js"
import { EventBus } from "../../src/events/EventBus.js"
import { EventLog } from "../../src/observers/EventLog.js"
import { GatewayEvents } from "../../src/gateway/event-bridge.js"
import { Observers } from "../../src/observers/Observers.js"
import { HostConfig } from "../../src/config/HostConfig.js"
import { PynchyConfig } from "../../src/config/schema.js"
import { Gateway, GatewaySettings } from "../../src/gateway/Gateway.js"
import { tempDir } from "../support/db.js"
import { call, chatAnswer, json, provider, scriptedUpstream } from "./support.js"

describe("gateway event log", () => {
  it.scoped("calls and budget events reach the host's events table through the bus, without message content", () =>
    Effect.gen(function* () {
      const up = yield* scriptedUpstream((hit, res) => json(res, 200, chatAnswer(hit.body.model)))
      const db = yield* Layer.build(Layer.provideMerge(Stores.layer, Database.layerMemory))
      const settings = GatewaySettings.layerFrom({
        dataDir: tempDir("pynchy-gw-"),
        providers: [provider({ name: "p", baseUrl: up.url, models: ["m"] })],
        gateway: GatewayConfig.make({ budgets: GatewayBudgets.make({ dailyTokens: 30 }) })
      })
      // The bus and the event log outlive the gateway (as in the host), so its last events are written.
      const events = Layer.provideMerge(EventLog.layer, Layer.provideMerge(Observers.layer, EventBus.layer)).pipe(Layer.provide(HostConfig.layerFrom(PynchyConfig.make({}))))
      const stack = GatewayEvents.layer.pipe(Layer.provideMerge(Gateway.layer), Layer.provide(settings), Layer.provideMerge(events), Layer.provide(Layer.succeedContext(db)))
      yield* Effect.gen(function* () {
        const gw = yield* Gateway
        const { token } = yield* gw.mintToken({ workspace: "main", conversationId: "terminal:a", expiresAt: 3_600_000 })
        const ask = { model: "m", messages: [{ role: "user", content: "private words" }], max_tokens: 5 }
        const target = { socketPath: gw.socketPath! }
        // Reserves 5 + an input estimate (about 26 of 30), spends 18; the next no longer fits.
        assert.strictEqual((yield* call(target, { path: "/v1/chat/completions", token: Redacted.value(token), body: ask })).status, 200)
        assert.strictEqual((yield* call(target, { path: "/v1/chat/completions", token: Redacted.value(token), body: ask })).status, 429)
      }).pipe(Effect.provide(stack))
      const rows = yield* Effect.flatMap(HostStore, (s) => s.recentEvents(10)).pipe(Effect.provide(db))
      assert.deepStrictEqual(rows.map((r) => r.type).reverse(), ["gateway.call", "gateway.budget_exceeded"])
      assert.deepInclude(rows[1]!.payload as object, { workspace: "main", conversationId: "terminal:a", turnId: null, model: "m", totalTokens: 18, retries: 0 })
      assert.include((rows[0]!.payload as { message: string }).message, "daily token budget")
      assert.notInclude(JSON.stringify(rows), "private words")

      // A restarted gateway starts from today's recorded usage: the budget is still used up.
      yield* Effect.gen(function* () {
        const gw = yield* Gateway
        const { token } = yield* gw.mintToken({ workspace: "main", conversationId: "terminal:a", expiresAt: 3_600_000 })
        const ask = { model: "m", messages: [{ role: "user", content: "again" }], max_tokens: 5 }
        assert.strictEqual((yield* call({ socketPath: gw.socketPath! }, { path: "/v1/chat/completions", token: Redacted.value(token), body: ask })).status, 429)
      }).pipe(Effect.provide(stack))
    }))
})
