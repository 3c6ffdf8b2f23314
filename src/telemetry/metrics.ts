/**
 * The host's OpenTelemetry metrics, fed by the event bus: turns and deliveries by outcome, gateway
 * latency (a histogram) and gateway tokens (a counter), by model. They are Effect metrics, which
 * @effect/opentelemetry exports over OTLP/HTTP with the traces (src/telemetry/Telemetry.ts).
 *
 * `metricsObserver` is the built-in observer the event bus feeds; `layer` attaches it to the bus
 * when export is on (OTEL_EXPORTER_OTLP_ENDPOINT set), and is nothing otherwise.
 */
import { Effect, Layer, Metric, MetricBoundaries, Option } from "effect"
import type { HostEvent } from "../events/HostEvent.js"
import { Observers } from "../observers/Observers.js"
import { otlpEndpoint } from "./Telemetry.js"

export const turns = Metric.counter("pynchy.turns", { description: "Turn attempts that ended, by outcome (completed, blocked, retried, failed)", incremental: true })
export const deliveries = Metric.counter("pynchy.deliveries", { description: "Deliveries that ended, by outcome (sent, failed, unknown)", incremental: true })
export const gatewayLatency = Metric.histogram(
  "pynchy.gateway.latency",
  MetricBoundaries.exponential({ start: 5, factor: 2, count: 15 }),
  "Gateway requests, receipt to last byte, in milliseconds, by model and outcome"
)
export const gatewayTokens = Metric.counter("pynchy.gateway.tokens", { description: "Tokens through the gateway, by model and type (input, output, cache_read, cache_write)", incremental: true })

const turnOutcome = {
  completed: Metric.tagged(turns, "outcome", "completed"),
  blocked: Metric.tagged(turns, "outcome", "blocked"),
  retried: Metric.tagged(turns, "outcome", "retried"),
  failed: Metric.tagged(turns, "outcome", "failed")
}
const deliveryOutcome = {
  sent: Metric.tagged(deliveries, "outcome", "sent"),
  failed: Metric.tagged(deliveries, "outcome", "failed"),
  unknown: Metric.tagged(deliveries, "outcome", "unknown")
}

const tokens = (model: string, type: string, n: number) =>
  n > 0 ? Metric.incrementBy(gatewayTokens.pipe(Metric.tagged("model", model), Metric.tagged("type", type)), n) : Effect.void

/** Updates the metrics an event counts in; other events change nothing. */
export const recordEvent = (event: HostEvent): Effect.Effect<void> => {
  switch (event.type) {
    case "turn.completed":
      return Metric.increment(event.code.startsWith("blocked") ? turnOutcome.blocked : turnOutcome.completed)
    case "turn.retried":
      return Metric.increment(turnOutcome.retried)
    case "turn.failed":
      return Metric.increment(turnOutcome.failed)
    case "delivery.sent":
      return Metric.increment(deliveryOutcome.sent)
    case "delivery.failed":
      return Metric.increment(deliveryOutcome.failed)
    case "delivery.unknown":
      return Metric.increment(deliveryOutcome.unknown)
    case "gateway.call":
      return Effect.all([
        Metric.update(gatewayLatency.pipe(Metric.tagged("model", event.model), Metric.tagged("outcome", event.outcome)), event.latencyMs),
        tokens(event.model, "input", event.inputTokens),
        tokens(event.model, "output", event.outputTokens),
        tokens(event.model, "cache_read", event.cacheReadTokens),
        tokens(event.model, "cache_write", event.cacheWriteTokens)
      ], { discard: true })
    default:
      return Effect.void
  }
}

/** The OpenTelemetry observer of the event bus (the shape src/observers/Observers.ts attaches). */
export const metricsObserver = {
  name: "opentelemetry",
  maxBatch: 512,
  // Counted after the steps of the turn whose events these are, not between them (as the event log).
  deferred: true,
  handle: (events: ReadonlyArray<HostEvent>): Effect.Effect<void> => Effect.forEach(events, recordEvent, { discard: true })
}

/** Attaches the metrics observer for the life of the layer, when OTEL_EXPORTER_OTLP_ENDPOINT is set. */
export const layer: Layer.Layer<never, never, Observers> = Layer.scopedDiscard(
  Effect.gen(function* () {
    if (Option.isNone(yield* otlpEndpoint)) return
    yield* Effect.flatMap(Observers, (observers) => observers.attach(metricsObserver))
  })
)
