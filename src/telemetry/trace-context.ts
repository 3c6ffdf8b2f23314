/**
 * W3C trace context (`traceparent: 00-<trace id>-<span id>-<flags>`) to and from Effect spans. A
 * message's context is stored with it (messages.trace_parent), so whatever later acts on it (a
 * turn, a retry after a restart, a delivery) continues its trace; the same context reaches the
 * runner (turn.json) and the upstream (the gateway's `traceparent` header). Effect's own tracer
 * makes ids of the same shape, so this holds with or without OpenTelemetry export.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Tracer from "effect/Tracer"

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/
const ZERO_TRACE = "0".repeat(32)
const ZERO_SPAN = "0".repeat(16)

/** The `traceparent` of a span. */
export const traceparentOf = (span: Tracer.AnySpan): string => `00-${span.traceId}-${span.spanId}-${span.sampled ? "01" : "00"}`

/** A stored or received `traceparent` as a parent span; none when absent or not a valid version-00 value. */
export const parseTraceparent = (value: string | null | undefined): Option.Option<Tracer.ExternalSpan> => {
  if (value === null || value === undefined) return Option.none()
  const m = TRACEPARENT.exec(value)
  if (m === null || m[1] === ZERO_TRACE || m[2] === ZERO_SPAN) return Option.none()
  return Option.some(Tracer.externalSpan({ traceId: m[1]!, spanId: m[2]!, sampled: (parseInt(m[3]!, 16) & 1) === 1 }))
}

/** The `traceparent` of the current span, null outside any span. */
export const currentTraceparent: Effect.Effect<string | null> = Effect.map(Effect.option(Effect.currentSpan), (span) =>
  Option.isSome(span) ? traceparentOf(span.value) : null
)

/**
 * Span options that continue stored contexts: the first valid one is the parent, those of other
 * traces become links (a turn answering several messages belongs to the trace of the first and
 * points at the rest). With none, a span of its own.
 */
export const continuing = (stored: ReadonlyArray<string | null | undefined>): Pick<Tracer.SpanOptions, "parent" | "links"> => {
  let parent: Tracer.ExternalSpan | undefined
  const links: Array<Tracer.SpanLink> = []
  for (const s of stored) {
    const span = parseTraceparent(s)
    if (Option.isNone(span)) continue
    if (parent === undefined) parent = span.value
    else if (span.value.traceId !== parent.traceId && !links.some((l) => l.span.traceId === span.value.traceId)) {
      links.push({ _tag: "SpanLink", span: span.value, attributes: {} })
    }
  }
  return parent === undefined ? {} : links.length === 0 ? { parent } : { parent, links }
}
