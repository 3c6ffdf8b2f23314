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
import { Config, Effect, Layer, Option } from "effect"
import { VERSION } from "../version.js"

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
    import("@effect/opentelemetry/NodeSdk"),
    import("@opentelemetry/sdk-trace-base"),
    import("@opentelemetry/sdk-metrics"),
    import("@opentelemetry/exporter-trace-otlp-http"),
    import("@opentelemetry/exporter-metrics-otlp-http")
  ])

/** Records every span but a single SQL statement's (see above); children follow their parent. */
const withoutStatements = (TraceBase: typeof import("@opentelemetry/sdk-trace-base")) => {
  const rest = new TraceBase.ParentBasedSampler({ root: new TraceBase.AlwaysOnSampler() })
  return {
    shouldSample: (...args: Parameters<typeof rest.shouldSample>) =>
      args[2] === STATEMENT_SPAN ? { decision: TraceBase.SamplingDecision.NOT_RECORD } : rest.shouldSample(...args),
    toString: () => `without ${STATEMENT_SPAN} spans`
  }
}
const STATEMENT_SPAN = "sql.execute"

/** Export to a given endpoint (what `layerConfig` builds once it has read the variables). */
export const layer = (settings: TelemetrySettings): Layer.Layer<never> =>
  Layer.unwrapEffect(
    Effect.map(Effect.promise(load), ([NodeSdk, TraceBase, SdkMetrics, TraceExporter, MetricExporter]) =>
      NodeSdk.layer(() => ({
        resource: { serviceName: settings.serviceName, serviceVersion: VERSION },
        tracerConfig: { sampler: withoutStatements(TraceBase) },
        spanProcessor: new TraceBase.BatchSpanProcessor(new TraceExporter.OTLPTraceExporter({ url: signalUrl(settings.endpoint, "traces") })),
        metricReader: new SdkMetrics.PeriodicExportingMetricReader({
          exporter: new MetricExporter.OTLPMetricExporter({ url: signalUrl(settings.endpoint, "metrics") }),
          exportIntervalMillis: settings.metricIntervalMillis ?? 60_000
        }),
        shutdownTimeout: "5 seconds"
      }))
    )
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
