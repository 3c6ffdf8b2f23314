/**
 * The OpenTelemetry metrics observer: events published on the real event bus become turns and
 * deliveries by outcome, gateway latency (a histogram) and tokens (a counter), and reach an
 * OTLP/HTTP receiver (decoded) when the telemetry layer closes.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer, Metric, Scope } from "effect"
import { HostConfig } from "../../src/config/HostConfig.js"
import { PynchyConfig } from "../../src/config/schema.js"
import { EventBus, type Publishable } from "../../src/events/EventBus.js"
import { Observers } from "../../src/observers/Observers.js"
import * as Metrics from "../../src/telemetry/metrics.js"
import * as Telemetry from "../../src/telemetry/Telemetry.js"
import { eventually } from "../support/eventually.js"
import { otlpReceiver } from "../support/otlp.js"

const call = (model: string, latencyMs: number): Publishable => ({
  type: "gateway.call", workspace: "main", conversationId: "test:room", turnId: 1, model, deployment: "up/tiny", api: "chat", stream: false,
  status: 200, outcome: "ok", inputTokens: 11, outputTokens: 7, cacheReadTokens: 0, cacheWriteTokens: 0, totalTokens: 18, estimated: false, latencyMs, retries: 0
})
const delivery = { deliveryId: 1, idempotencyKey: "t1:0", conversationId: "test:room", turnId: 1, kind: "reply" as const }

const EVENTS: ReadonlyArray<Publishable> = [
  { type: "turn.completed", turnId: 1, conversationId: "test:room", attempt: 1, code: "ok" },
  { type: "turn.completed", turnId: 2, conversationId: "test:room", attempt: 1, code: "blocked:needs_input" },
  { type: "turn.retried", turnId: 3, conversationId: "test:room", attempt: 1, code: "turn_timeout", notBefore: 0 },
  { type: "turn.failed", turnId: 3, conversationId: "test:room", attempt: 3, code: "turn_timeout" },
  { type: "delivery.sent", ...delivery, attempt: 1 },
  { type: "delivery.sent", ...delivery, attempt: 1 },
  { type: "delivery.unknown", ...delivery, attempt: 2, reason: "interrupted" },
  call("tiny", 12),
  call("tiny", 300),
  { type: "message.ingested", messageId: 1, conversationId: "test:room", workspace: "main", connection: "test", place: "room", providerEventId: "e1" }
]

const point = (metrics: ReadonlyArray<{ name: string; points: ReadonlyArray<{ attributes: Record<string, unknown>; value: number }> }>, name: string, attrs: Record<string, unknown>) =>
  metrics.filter((m) => m.name === name).flatMap((m) => m.points).filter((p) => Object.entries(attrs).every(([k, v]) => p.attributes[k] === v)).at(-1)?.value

describe("OpenTelemetry metrics from the event bus", () => {
  it.scopedLive("turns, deliveries, gateway latency and tokens reach the OTLP receiver", () =>
    Effect.gen(function* () {
      const receiver = yield* otlpReceiver
      process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.endpoint
      yield* Effect.addFinalizer(() => Effect.sync(() => delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT))
      const completedBefore = (yield* Metric.value(Metric.tagged(Metrics.turns, "outcome", "completed"))).count
      const scope = yield* Scope.make()
      // The telemetry layer under the bus and its observer, as in the host's stack.
      const ctx = yield* Layer.buildWithScope(
        Layer.provideMerge(Metrics.layer, Observers.layer).pipe(Layer.provideMerge(EventBus.layer), Layer.provide(HostConfig.layerFrom(PynchyConfig.make({}))), Layer.provideMerge(Telemetry.layer({ endpoint: receiver.endpoint, serviceName: "pynchy-metrics" }))),
        scope
      )
      const bus = yield* Effect.provide(EventBus, ctx)
      yield* Effect.forEach(EVENTS, bus.publish, { discard: true })
      // Handled by the observer's fiber (the metric moved), then flushed by the layer's release.
      yield* eventually(
        Effect.map(Metric.value(Metric.tagged(Metrics.turns, "outcome", "completed")), (s) => (s.count > completedBefore ? true : undefined)),
        { label: "the observer counting the completed turn" }
      )
      yield* eventually(
        Effect.map(Metric.value(Metrics.gatewayLatency.pipe(Metric.tagged("model", "tiny"), Metric.tagged("outcome", "ok"))), (s) => (s.count >= 2 ? true : undefined)),
        { label: "the observer recording both gateway calls" }
      )
      yield* Scope.close(scope, Exit.void)

      const m = receiver.metrics
      assert.strictEqual(point(m, "pynchy.turns", { outcome: "completed" }), 1)
      assert.strictEqual(point(m, "pynchy.turns", { outcome: "blocked" }), 1)
      assert.strictEqual(point(m, "pynchy.turns", { outcome: "retried" }), 1)
      assert.strictEqual(point(m, "pynchy.turns", { outcome: "failed" }), 1)
      assert.strictEqual(point(m, "pynchy.deliveries", { outcome: "sent" }), 2)
      assert.strictEqual(point(m, "pynchy.deliveries", { outcome: "unknown" }), 1)
      assert.strictEqual(point(m, "pynchy.gateway.latency", { model: "tiny", outcome: "ok" }), 2, "a histogram of two calls")
      assert.strictEqual(point(m, "pynchy.gateway.tokens", { model: "tiny", type: "input" }), 22)
      assert.strictEqual(point(m, "pynchy.gateway.tokens", { model: "tiny", type: "output" }), 14)
    }))
})
