import { Duration, Effect } from "effect"

export interface EventuallyOptions {
  /** What is awaited, in words: the failure says it ("gave up after 10 s waiting for <label>"). */
  readonly label: string
  /**
   * Real time to give up after (default 50 s: a process starting under tsx on a loaded machine can
   * take half a minute): a bound for a broken test, never a figure a test asserts. Under the test's
   * own timeout (60 s), so a wait that hangs from the start fails with this one's message.
   */
  readonly timeout?: Duration.DurationInput
}

/** The wait ended without a value: what was awaited, for how long, and the last thing the probe threw. */
export class EventuallyTimedOut extends Error {
  constructor(readonly label: string, readonly timeoutMs: number, readonly lastError: unknown) {
    super(
      `gave up after ${Duration.format(Duration.millis(timeoutMs))} waiting for ${label}` +
        (lastError === undefined ? "" : ` (the probe last threw: ${lastError instanceof Error ? lastError.message : String(lastError)})`)
    )
  }
}

/** One real timer tick, whatever clock the test runs on (a TestClock would never wake an Effect.sleep). */
const pause = (ms: number) => Effect.async<void>((resume) => {
  const t = setTimeout(() => resume(Effect.void), ms)
  return Effect.sync(() => clearTimeout(t))
})

/**
 * Runs `probe` until it gives a value (anything but undefined), pausing between tries on real
 * timers (1 ms, doubling to 50 ms), so the processes, sockets and fibers under test run meanwhile.
 * The probe is an Effect, or a function (sync or async); a function that throws counts as "not yet".
 * Gives up with `EventuallyTimedOut` (a defect naming `label`) after `timeout` of real time.
 * From an async test: `await Effect.runPromise(eventually(...))`.
 */
export const eventually = <A, E = never, R = never>(
  probe: Effect.Effect<A | undefined, E, R> | (() => A | undefined | Promise<A | undefined>),
  options: EventuallyOptions
): Effect.Effect<A, E, R> => {
  const timeoutMs = Duration.toMillis(Duration.decode(options.timeout ?? "50 seconds"))
  let lastError: unknown = undefined
  const attempt: Effect.Effect<A | undefined, E, R> = Effect.isEffect(probe)
    ? probe
    : Effect.tryPromise(async () => probe()).pipe(
        Effect.catchAll((e) => Effect.sync(() => {
          lastError = e.error
          return undefined
        }))
      )
  return Effect.gen(function* () {
    const deadline = performance.now() + timeoutMs
    let delay = 1
    while (true) {
      const value = yield* attempt
      if (value !== undefined) return value
      if (performance.now() > deadline) return yield* Effect.die(new EventuallyTimedOut(options.label, timeoutMs, lastError))
      yield* pause(delay)
      delay = Math.min(delay * 2, 50)
    }
  })
}

/** `eventually` for async tests: resolves with the probe's value, or rejects naming `label`. */
export const waitFor = <A>(label: string, probe: () => A | undefined | Promise<A | undefined>, timeout?: Duration.DurationInput): Promise<A> =>
  Effect.runPromise(eventually(probe, { label, ...(timeout !== undefined ? { timeout } : {}) }))
