/**
 * Remote reachability: every `tunnel` contribution's `detect()` under one deadline, concurrently,
 * each answer decoded. A detector that throws, answers nonsense or misses the deadline is reported
 * absent with the reason (`detect_failed`, `invalid_answer`, `detect_timeout`), never an error of
 * the command that asked. The first present tunnel with a URL is the host's public address.
 */
import { Duration, Effect, Either, Schema } from "effect"
import type { Tunnel } from "../contracts/plugin.js"
import { invoke } from "../contracts/call-hook.js"

export const DETECT_TIMEOUT = Duration.seconds(5)

const Detected = Schema.Struct({
  present: Schema.Boolean,
  url: Schema.optional(Schema.String.pipe(Schema.pattern(/^https?:\/\/\S+$/))),
  detail: Schema.String.pipe(Schema.maxLength(500))
})

export interface TunnelReport {
  readonly name: string
  readonly plugin: string
  readonly present: boolean
  readonly url?: string
  readonly detail: string
  /** Why the detector gave no answer, when it did not. */
  readonly code?: "detect_failed" | "detect_timeout" | "invalid_answer"
}

export const detectTunnels = (
  tunnels: ReadonlyArray<{ readonly name: string; readonly plugin: string; readonly value: Tunnel }>,
  timeout: Duration.DurationInput = DETECT_TIMEOUT
): Effect.Effect<ReadonlyArray<TunnelReport>> =>
  Effect.forEach(tunnels, ({ name, plugin, value }) =>
    invoke(() => value.detect(), timeout).pipe(
      Effect.map((answer): TunnelReport =>
        Either.match(Schema.decodeUnknownEither(Detected)(answer, { onExcessProperty: "ignore" }), {
          onLeft: () => ({ name, plugin, present: false, detail: "its detect() answered something other than { present, url?, detail }", code: "invalid_answer" }),
          onRight: (d) => ({ name, plugin, present: d.present, detail: d.detail, ...(d.present && d.url !== undefined ? { url: d.url } : {}) })
        })
      ),
      Effect.catchAll((f) =>
        Effect.succeed<TunnelReport>(
          f.code === "hook_timeout"
            ? { name, plugin, present: false, detail: `detect() gave no answer within ${Duration.format(Duration.decode(timeout))}`, code: "detect_timeout" }
            : { name, plugin, present: false, detail: `detect() failed: ${f.problem}`, code: "detect_failed" }
        )
      )
    ), { concurrency: "unbounded" })

/** The first present tunnel (in registration order) that gave a URL. */
export const publicUrl = (reports: ReadonlyArray<TunnelReport>): TunnelReport | undefined => reports.find((r) => r.present && r.url !== undefined)
