/**
 * An OTLP/HTTP receiver for tests: a node:http server on a free 127.0.0.1 port taking
 * `POST /v1/traces` and `POST /v1/metrics` as the SDK's OTLP/HTTP exporters send them (JSON,
 * gzip when asked), decoding every body with Schema: a body that does not decode fails the test.
 */
import { Effect, Schema, type Scope } from "effect"
import * as http from "node:http"
import type * as net from "node:net"
import * as zlib from "node:zlib"

const AnyValue = Schema.Struct({
  stringValue: Schema.optional(Schema.String),
  intValue: Schema.optional(Schema.Union(Schema.Number, Schema.String)),
  doubleValue: Schema.optional(Schema.Number),
  boolValue: Schema.optional(Schema.Boolean)
})
const KeyValue = Schema.Struct({ key: Schema.String, value: AnyValue })
const Hex = (n: number) => Schema.String.pipe(Schema.pattern(new RegExp(`^[0-9a-f]{${n}}$`)))

const OtlpSpan = Schema.Struct({
  traceId: Hex(32),
  spanId: Hex(16),
  parentSpanId: Schema.optional(Schema.Union(Hex(16), Schema.Literal(""))),
  name: Schema.String,
  kind: Schema.Number,
  startTimeUnixNano: Schema.Union(Schema.String, Schema.Number),
  endTimeUnixNano: Schema.Union(Schema.String, Schema.Number),
  attributes: Schema.optionalWith(Schema.Array(KeyValue), { default: () => [] }),
  links: Schema.optionalWith(Schema.Array(Schema.Struct({ traceId: Hex(32), spanId: Hex(16) })), { default: () => [] }),
  status: Schema.optional(Schema.Struct({ code: Schema.optional(Schema.Number) }))
})
const Resource = Schema.Struct({ attributes: Schema.optionalWith(Schema.Array(KeyValue), { default: () => [] }) })
const TracesRequest = Schema.Struct({
  resourceSpans: Schema.Array(Schema.Struct({
    resource: Resource,
    scopeSpans: Schema.Array(Schema.Struct({ spans: Schema.Array(OtlpSpan) }))
  }))
})
const MetricsRequest = Schema.Struct({
  resourceMetrics: Schema.Array(Schema.Struct({
    resource: Resource,
    scopeMetrics: Schema.Array(Schema.Struct({
      metrics: Schema.Array(Schema.Struct({
        name: Schema.String,
        sum: Schema.optional(Schema.Struct({ dataPoints: Schema.Array(Schema.Struct({ attributes: Schema.optionalWith(Schema.Array(KeyValue), { default: () => [] }), asInt: Schema.optional(Schema.Union(Schema.Number, Schema.String)), asDouble: Schema.optional(Schema.Number) })) })),
        histogram: Schema.optional(Schema.Struct({ dataPoints: Schema.Array(Schema.Struct({ attributes: Schema.optionalWith(Schema.Array(KeyValue), { default: () => [] }), count: Schema.Union(Schema.Number, Schema.String) })) }))
      }))
    }))
  }))
})

/** A received span with the resource's service name and its attributes flattened. */
export interface ReceivedSpan {
  readonly traceId: string
  readonly spanId: string
  /** undefined for a root span. */
  readonly parentSpanId: string | undefined
  readonly name: string
  readonly service: string | undefined
  readonly attributes: Record<string, unknown>
  readonly links: ReadonlyArray<{ readonly traceId: string; readonly spanId: string }>
}

export interface ReceivedMetric {
  readonly name: string
  readonly points: ReadonlyArray<{ readonly attributes: Record<string, unknown>; readonly value: number }>
}

export interface OtlpReceiver {
  /** What `OTEL_EXPORTER_OTLP_ENDPOINT` is set to. */
  readonly endpoint: string
  readonly spans: Array<ReceivedSpan>
  readonly metrics: Array<ReceivedMetric>
  /** Content types of the bodies received. */
  readonly contentTypes: Array<string>
}

const flatten = (kvs: ReadonlyArray<typeof KeyValue.Type>): Record<string, unknown> =>
  Object.fromEntries(kvs.map((kv) => [kv.key, kv.value.stringValue ?? (kv.value.intValue !== undefined ? Number(kv.value.intValue) : kv.value.doubleValue ?? kv.value.boolValue)]))

const decodeTraces = Schema.decodeUnknownSync(Schema.parseJson(TracesRequest))
const decodeMetrics = Schema.decodeUnknownSync(Schema.parseJson(MetricsRequest))

export const otlpReceiver: Effect.Effect<OtlpReceiver, never, Scope.Scope> = Effect.gen(function* () {
  const spans: Array<ReceivedSpan> = []
  const metrics: Array<ReceivedMetric> = []
  const contentTypes: Array<string> = []
  const sockets = new Set<net.Socket>()
  const server = http.createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      let body = Buffer.concat(chunks)
      if (req.headers["content-encoding"] === "gzip") body = zlib.gunzipSync(body)
      const type = req.headers["content-type"] ?? ""
      contentTypes.push(type)
      try {
        if (!type.startsWith("application/json")) throw new Error(`expected an OTLP/JSON body, got '${type}'`)
        if (req.url === "/v1/traces") {
          for (const rs of decodeTraces(body.toString("utf8")).resourceSpans) {
            const service = flatten(rs.resource.attributes)["service.name"] as string | undefined
            for (const ss of rs.scopeSpans) {
              for (const s of ss.spans) {
                spans.push({
                  traceId: s.traceId,
                  spanId: s.spanId,
                  parentSpanId: s.parentSpanId === undefined || s.parentSpanId === "" ? undefined : s.parentSpanId,
                  name: s.name,
                  service,
                  attributes: flatten(s.attributes),
                  links: s.links.map((l) => ({ traceId: l.traceId, spanId: l.spanId }))
                })
              }
            }
          }
        } else if (req.url === "/v1/metrics") {
          for (const rm of decodeMetrics(body.toString("utf8")).resourceMetrics) {
            for (const sm of rm.scopeMetrics) {
              for (const m of sm.metrics) {
                const points = m.sum?.dataPoints.map((p) => ({ attributes: flatten(p.attributes), value: Number(p.asInt ?? p.asDouble ?? 0) })) ??
                  m.histogram?.dataPoints.map((p) => ({ attributes: flatten(p.attributes), value: Number(p.count) })) ?? []
                metrics.push({ name: m.name, points })
              }
            }
          }
        } else {
          res.writeHead(404).end()
          return
        }
        res.writeHead(200, { "content-type": "application/json" }).end("{}")
      } catch (e) {
        // The exporter logs a failed export; the test sees nothing arrive and fails on its assertions.
        console.error("otlp receiver: undecodable body", e)
        res.writeHead(400).end()
      }
    })
  })
  server.on("connection", (s) => {
    sockets.add(s)
    s.on("close", () => sockets.delete(s))
  })
  yield* Effect.acquireRelease(
    Effect.async<void>((resume) => {
      server.listen(0, "127.0.0.1", () => resume(Effect.void))
    }),
    () => Effect.sync(() => {
      for (const s of sockets) s.destroy()
      server.close()
    })
  )
  return { endpoint: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`, spans, metrics, contentTypes }
})
