/**
 * OpenTelemetry export, configured only by the standard variables: `OTEL_EXPORTER_OTLP_ENDPOINT`
 * (off when unset) and `OTEL_SERVICE_NAME` (default `pynchy`). When on, the host's Effect spans
 * and metrics go to `<endpoint>/v1/traces` and `<endpoint>/v1/metrics` over OTLP/HTTP (JSON),
 * through @effect/opentelemetry and the OTel SDK's exporters; the layer's release flushes both.
 *
 * Spans of single SQL statements (`sql.execute`, one per statement from @effect/sql) are not
 * recorded: they would be most of the spans, and making and exporting them was most of the cost
 * export adds to a turn; the path's own spans (ingest, turn, sandbox, gateway, delivery) carry
 * its timing.
 *
 * When off the layer is `Layer.empty` and no OpenTelemetry module is loaded: they are imported
 * here, dynamically, only when the endpoint is set (the CLI bundle keeps them external), so the
 * start path pays nothing for them.
 */
import { Config, Effect, Layer, Option, Tracer } from "effect"
import { VERSION } from "../version.js"
import { importModule } from "../system/import-module.js"

export interface TelemetrySettings {
  /** The OTLP/HTTP base URL, as `OTEL_EXPORTER_OTLP_ENDPOINT` gives it. */
  readonly endpoint: string
  readonly serviceName: string
  /** How often metrics are exported (default 60 s, the SDK's own default). */
  readonly metricIntervalMillis?: number
}

/** Where the OTLP/HTTP signals go, per the spec: the base URL plus `v1/<signal>`. */
export const signalUrl = (endpoint: string, signal: "traces" | "metrics") => `${endpoint.replace(/\/+$/, "")}/v1/${signal}`

const load = () =>
  Promise.all([
    importModule<typeof import("@effect/opentelemetry/NodeSdk")>("@effect/opentelemetry/NodeSdk"),
    importModule<typeof import("@effect/opentelemetry/Tracer")>("@effect/opentelemetry/Tracer"),
    importModule<typeof import("@opentelemetry/sdk-trace-base")>("@opentelemetry/sdk-trace-base"),
    importModule<typeof import("@opentelemetry/sdk-metrics")>("@opentelemetry/sdk-metrics"),
    importModule<typeof import("@opentelemetry/exporter-trace-otlp-http")>("@opentelemetry/exporter-trace-otlp-http"),
    importModule<typeof import("@opentelemetry/exporter-metrics-otlp-http")>("@opentelemetry/exporter-metrics-otlp-http")
  ])

const STATEMENT_SPAN = "sql.execute"
const NO_ATTRIBUTES: ReadonlyMap<string, unknown> = new Map()

/** What stands for a statement's span: not recorded, not exported, and nothing made for it. */
const unrecorded = (
  name: string,
  parent: Tracer.Span["parent"],
  context: Tracer.Span["context"],
  links: Tracer.Span["links"],
  startTime: bigint,
  kind: Tracer.SpanKind
): Tracer.Span => ({
  _tag: "Span", name, spanId: "", traceId: "", parent, context, links, kind, sampled: false,
  status: { _tag: "Started", startTime }, attributes: NO_ATTRIBUTES,
  end: () => {}, attribute: () => {}, event: () => {}, addLinks: () => {}
})

/**
 * Effect's spans as OpenTelemetry spans, but for two things that a CPU profile of the pipeline
 * bench showed to be most of what export cost between a commit and its turn:
 * - a single SQL statement's span (`sql.execute`, one per statement from @effect/sql) is not made
 *   at all (see above);
 * - the tracer's `context` hook is left out. It makes the current span OpenTelemetry's active
 *   context around every step of every fiber inside a span (a new context object each time), for
 *   OpenTelemetry's own instrumentations to see; the host uses none (it writes `traceparent`
 *   itself, src/telemetry/trace-context.ts).
 */
const spansOnly = (OtelTracer: typeof import("@effect/opentelemetry/Tracer")) =>
  Layer.unwrapEffect(Effect.map(OtelTracer.make, (otel) =>
    Layer.setTracer(Tracer.make({
      span: (name, parent, context, links, startTime, kind, options) =>
        name === STATEMENT_SPAN ? unrecorded(name, parent, context, links, startTime, kind) : otel.span(name, parent, context, links, startTime, kind, options),
      context: (f) => f()
    }))))

/** Export to a given endpoint (what `layerConfig` builds once it has read the variables). */
export const layer = (settings: TelemetrySettings): Layer.Layer<never> =>
  Layer.unwrapEffect(
    Effect.map(Effect.promise(load), ([NodeSdk, OtelTracer, TraceBase, SdkMetrics, TraceExporter, MetricExporter]) => {
      const shutdownTimeout = "5 seconds"
      // The resource (and OTEL_RESOURCE_ATTRIBUTES) and the metrics, as the SDK layer makes them.
      const sdk = NodeSdk.layer(() => ({
        resource: { serviceName: settings.serviceName, serviceVersion: VERSION },
        metricReader: new SdkMetrics.PeriodicExportingMetricReader({
          exporter: new MetricExporter.OTLPMetricExporter({ url: signalUrl(settings.endpoint, "metrics") }),
          exportIntervalMillis: settings.metricIntervalMillis ?? 60_000
        }),
        shutdownTimeout
      }))
      // The traces: the SDK's provider (flushed and shut down on release) under `spansOnly`.
      const provider = NodeSdk.layerTracerProvider(
        new TraceBase.BatchSpanProcessor(new TraceExporter.OTLPTraceExporter({ url: signalUrl(settings.endpoint, "traces") })),
        { shutdownTimeout }
      )
      return spansOnly(OtelTracer).pipe(Layer.provide(OtelTracer.layerTracer), Layer.provide(provider), Layer.provideMerge(sdk))
    })
  )

/** `OTEL_EXPORTER_OTLP_ENDPOINT`: none when unset or empty (export off). */
export const otlpEndpoint: Effect.Effect<Option.Option<string>> = Config.option(Config.nonEmptyString("OTEL_EXPORTER_OTLP_ENDPOINT")).pipe(
  Effect.orElseSucceed(() => Option.none<string>())
)

/** Reads `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_SERVICE_NAME`; `Layer.empty` when the endpoint is unset or empty. */
export const layerConfig: Layer.Layer<never> = Layer.unwrapEffect(
  Effect.gen(function* () {
    const endpoint = yield* otlpEndpoint
    if (Option.isNone(endpoint)) return Layer.empty
    const serviceName = yield* Config.nonEmptyString("OTEL_SERVICE_NAME").pipe(Config.withDefault("pynchy"), Effect.orElseSucceed(() => "pynchy"))
    return layer({ endpoint: endpoint.value, serviceName })
  })
)
