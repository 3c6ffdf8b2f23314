import { Cause, Duration, Effect } from "effect"

/** Why a hook gave no value: it threw/rejected/failed, or missed its deadline. */
export interface HookFailure {
  readonly code: "hook_failed" | "hook_timeout"
  readonly problem: string
}

const isPromiseLike = (u: unknown): u is PromiseLike<unknown> =>
  u !== null && (typeof u === "object" || typeof u === "function") && typeof (u as { then?: unknown }).then === "function"

// Plugin error texts can be long (stack dumps in messages); the first line, bounded, names the problem.
const describe = (error: unknown): string => {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : `threw ${typeof error === "string" ? error : typeof error}`
  const line = text.split("\n")[0] ?? text
  return line.length > 300 ? `${line.slice(0, 300)}...` : line
}

const failed = (error: unknown): HookFailure => ({ code: "hook_failed", problem: describe(error) })

/**
 * Runs one plugin call: a plain value is taken as is, a Promise is awaited, an Effect is run;
 * a throw, a rejection or an Effect failure/defect becomes `hook_failed`, a missed deadline
 * `hook_timeout` (the waiting stops; a Promise cannot be cancelled).
 */
export const invoke = (call: () => unknown, timeout: Duration.DurationInput): Effect.Effect<unknown, HookFailure> =>
  Effect.suspend((): Effect.Effect<unknown, HookFailure> => {
    let result: unknown
    try {
      result = call()
    } catch (error) {
      return Effect.fail(failed(error))
    }
    // A plain value is already there: no deadline to arm (the common case, and the cheap one).
    if (Effect.isEffect(result)) {
      return withDeadline(
        (result as Effect.Effect<unknown, unknown>).pipe(Effect.catchAllCause((cause) => Effect.fail(failed(Cause.squash(cause))))),
        timeout
      )
    }
    if (isPromiseLike(result)) return withDeadline(Effect.tryPromise({ try: () => result as PromiseLike<unknown>, catch: failed }), timeout)
    return Effect.succeed(result)
  })

const withDeadline = <A>(effect: Effect.Effect<A, HookFailure>, timeout: Duration.DurationInput) =>
  Effect.timeoutFail(effect, {
    duration: timeout,
    onTimeout: (): HookFailure => ({ code: "hook_timeout", problem: `no result within ${Duration.format(Duration.decode(timeout))}` })
  })
