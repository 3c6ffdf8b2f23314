/**
 * A turn's progress on its channel (typing, streamed text): best-effort and bounded. Events go to
 * the channel in order, one call at a time, from a fiber of the host's scope, so the turn never
 * waits on the channel. Nothing here is recorded: a crash loses progress, never a reply.
 */
import { Duration, Effect, Queue, type Scope } from "effect"
import type { NativeChannel, ProgressEvent, ProgressTarget } from "../contracts/channel.js"

/** Deltas waiting for a slow channel past this many are dropped (the reply still arrives whole). */
export const PROGRESS_BUFFER = 256
/** A call that takes longer stalls the feed: the turn's later deltas are dropped, `ended` is still sent. */
export const PROGRESS_CALL_TIMEOUT = Duration.seconds(5)

export interface ProgressFeed {
  /** Streamed text of the reply that will be delivered with `replyKey`. Never waits on the channel. */
  readonly delta: (replyKey: string, text: string) => Effect.Effect<void>
  /** The reply with `replyKey` is being recorded: its deltas not yet shown are dropped (the reply supersedes them). */
  readonly replied: (replyKey: string) => Effect.Effect<void>
}

export const noProgress: ProgressFeed = { delta: () => Effect.void, replied: () => Effect.void }

type ShowsProgress = NativeChannel & { readonly progress: NonNullable<NativeChannel["progress"]> }

export const showsProgress = (channel: NativeChannel | undefined): channel is ShowsProgress => typeof channel?.progress === "function"

/**
 * Sends `started` now and `ended` when the scope closes; `fork` runs the sending fiber in a scope
 * that outlives the turn (so `ended` still goes out after it).
 */
export const openFeed = (
  channel: ShowsProgress,
  target: ProgressTarget,
  fork: (pump: Effect.Effect<void>) => Effect.Effect<unknown>
): Effect.Effect<ProgressFeed, never, Scope.Scope> =>
  Effect.gen(function* () {
    const queue = yield* Queue.unbounded<ProgressEvent>()
    let pending = 0
    let stalled = false
    let ended = false
    // Bounded by the turn's reply cap.
    const replied = new Set<string>()

    const call = (event: ProgressEvent) =>
      channel.progress(event).pipe(
        Effect.timeout(PROGRESS_CALL_TIMEOUT),
        Effect.catchTag("TimeoutException", () => Effect.sync(() => (stalled = true))),
        // A channel's failure is its own: progress is never worth a log line per delta.
        Effect.catchAllCause(() => Effect.void)
      )

    const pump = Effect.gen(function* () {
      while (true) {
        const event = yield* Queue.take(queue)
        if (event.type === "delta") pending--
        if (event.type === "delta" && (stalled || replied.has(event.replyKey))) continue
        yield* call(event)
        if (event.type === "ended") return
      }
    })

    yield* fork(pump)
    yield* Queue.offer(queue, { ...target, type: "started" })
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        ended = true
        return Queue.offer(queue, { ...target, type: "ended" })
      })
    )
    return {
      delta: (replyKey, text) =>
        Effect.suspend(() => {
          if (ended || stalled || pending >= PROGRESS_BUFFER || text === "") return Effect.void
          pending++
          return Queue.offer(queue, { ...target, type: "delta", replyKey, text })
        }),
      replied: (replyKey) => Effect.sync(() => void replied.add(replyKey))
    }
  })
