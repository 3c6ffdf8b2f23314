/**
 * A typing indicator while a turn runs, for the channels whose platform shows one (Discord,
 * Telegram, Matrix): one call now and one every `renew`, in a fiber the runtime interrupts when the
 * turn ends (`ended`, ../pipeline/progress.ts).
 *
 * Interrupting it stops the renewals but lets a call already in flight finish (within
 * `TYPING_CALL_TIMEOUT`). Aborting that call would gain nothing (the notice is sent whole or not at
 * all, and it lapses by itself) and costs the platform client: an HTTP/1.1 request aborted
 * mid-flight closes its keep-alive connection, so the next call (often the reply) connects again,
 * and the abort makes errors with stack traces. A quick turn ends while its first typing call is
 * still in flight every time (scripts/bench/README.md, Session 9). It also keeps the order of a
 * channel that says "stopped typing" after the interrupt (Matrix): that call goes after this one.
 */
import { Duration, Effect, Fiber, Schedule } from "effect"

/** The longest one typing call may take; a turn's end waits at most this long for one in flight. */
export const TYPING_CALL_TIMEOUT = Duration.seconds(5)

/** `call` now and every `renew` until interrupted; failures are ignored (typing is progress, never a delivery). */
export const keepTyping = <E, R>(call: Effect.Effect<unknown, E, R>, renew: Duration.DurationInput): Effect.Effect<void, never, R> =>
  // The call runs in a fiber of its own, not a child (Effect passes an interrupt on to children at
  // once), stopped only by its deadline; the loop joins it uninterruptibly, so an interrupt from
  // outside waits for the call and lands in the sleep between calls.
  Effect.forkDaemon(Effect.interruptible(Effect.ignore(Effect.timeout(call, TYPING_CALL_TIMEOUT)))).pipe(
    Effect.flatMap(Fiber.join),
    Effect.uninterruptible,
    Effect.repeat(Schedule.spaced(renew)),
    Effect.asVoid
  )
