/**
 * `pynchy doctor`'s look at each provider: one `GET <baseUrl>/models` with the provider's key (a
 * one-token request where `/models` is not served), so a baseUrl nothing answers, or a key the
 * provider refuses, is found before the first message fails with a 502.
 */
import { Duration, Effect, Option, Redacted, Schema } from "effect"
import type { Deployment } from "./catalog.js"

export class ProbeFailed extends Schema.TaggedError<ProbeFailed>()("ProbeFailed", {
  provider: Schema.String,
  reason: Schema.String
}) {}

const PROBE_TIMEOUT = Duration.seconds(5)

const baseOf = (d: Deployment) => {
  const host = d.hostname.includes(":") ? `[${d.hostname}]` : d.hostname
  return `${d.protocol}//${host}:${d.port}${d.basePath}`
}

const headersOf = (d: Deployment): Record<string, string> => {
  const key = Option.map(d.key, Redacted.value)
  if (Option.isNone(key)) return {}
  return d.kind === "anthropic" ? { "x-api-key": key.value, "anthropic-version": "2023-06-01" } : { authorization: `Bearer ${key.value}` }
}

const request = (d: Deployment, path: string, init: { method: string; body?: string }) =>
  Effect.tryPromise({
    try: (signal) =>
      fetch(`${baseOf(d)}${path}`, {
        method: init.method,
        headers: { ...headersOf(d), ...(init.body !== undefined ? { "content-type": "application/json" } : {}) },
        ...(init.body !== undefined ? { body: init.body } : {}),
        signal
      }).then(async (res) => {
        await res.arrayBuffer().catch(() => undefined)
        return res.status
      }),
    catch: (e) => {
      const cause = (e as { cause?: { code?: string } }).cause
      return new ProbeFailed({ provider: d.provider, reason: `nothing answers at ${baseOf(d)} (${cause?.code ?? (e as Error).name})` })
    }
  }).pipe(
    Effect.timeoutFail({ duration: PROBE_TIMEOUT, onTimeout: () => new ProbeFailed({ provider: d.provider, reason: `probe_timeout: ${baseOf(d)} did not answer within ${Duration.format(PROBE_TIMEOUT)}` }) })
  )

const verdict = (d: Deployment, what: string, status: number): Effect.Effect<string, ProbeFailed> =>
  status >= 200 && status < 300
    ? Effect.succeed(`${what} answered ${status}`)
    : Effect.fail(new ProbeFailed({
      provider: d.provider,
      reason: status === 401 || status === 403 ? `${what} answered ${status}: the provider refuses the key` : `${what} answered ${status}`
    }))

/** Probes one deployment of a provider; succeeds with what answered. */
export const probeProvider = (d: Deployment): Effect.Effect<string, ProbeFailed> =>
  Effect.gen(function* () {
    const status = yield* request(d, "/models", { method: "GET" })
    if (status !== 404 && status !== 405) return yield* verdict(d, "GET /models", status)
    const [path, body] = d.kind === "anthropic"
      ? ["/messages", { model: d.model, max_tokens: 1, messages: [{ role: "user", content: "ping" }] }]
      : ["/chat/completions", { model: d.model, max_tokens: 1, messages: [{ role: "user", content: "ping" }] }]
    return yield* verdict(d, `a one-token request to ${path}`, yield* request(d, path as string, { method: "POST", body: JSON.stringify(body) }))
  })
