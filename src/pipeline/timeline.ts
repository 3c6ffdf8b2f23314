/**
 * A conversation's history, newest first: user messages and delivered replies merged from two
 * keyset-paged, indexed reads that share one statement. Entries are taken from buffered pages
 * synchronously; the store is read only when a side runs dry, for that side alone, and reading
 * stops at the context start or a summary's end.
 */
import { Effect, Option } from "effect"
import { comparePositions, type ContextStart, type ContextStore, type Position, type TimelineEntry } from "../db/ContextStore.js"
import type { ConversationId } from "../domain/ids.js"

/** A side's later pages: 128, 256, 512, then 1,024 rows. A long read costs a few round trips, never the whole history at once. */
const refill = (reads: number) => Math.min(64 << reads, 1024)

export interface TimelineBounds {
  readonly conversationId: ConversationId
  readonly start: ContextStart
  /** The turn being built: its own replies (of an earlier attempt) are not history. */
  readonly beforeTurn: number
  /** The turn's first new message. */
  readonly beforeMessage: number
  /** The position a summary covers up to (inclusive), if one applies. */
  readonly floor: Position | null
  /** Rows per side of the first read (default 64 each): what the caller expects to consume. */
  readonly firstPage?: { readonly users: number; readonly replies: number }
}

export interface Timeline {
  /** The next older entry, or none once the history ends. */
  readonly next: Effect.Effect<Option.Option<TimelineEntry>>
  /**
   * Consumes entries newest first, handing each to `take`, until `take` returns false (that
   * entry stays consumed) or the history ends: one Effect step per read, not per entry.
   */
  readonly walk: (take: (e: TimelineEntry) => boolean) => Effect.Effect<void>
  /** Entries consumed so far, per side. */
  readonly consumed: () => { readonly users: number; readonly replies: number }
}

const FILL = Symbol("fill")

export const openTimeline = (store: ContextStore.Service, b: TimelineBounds): Timeline => {
  let users: ReadonlyArray<TimelineEntry> = []
  let replies: ReadonlyArray<TimelineEntry> = []
  let u0 = 0
  let r0 = 0
  let usersTaken = 0
  let repliesTaken = 0
  let userBefore = b.beforeMessage
  let replyBefore = Number.MAX_SAFE_INTEGER
  let usersDone = false
  let repliesDone = false
  let ended = false
  let userReads = 0
  let replyReads = 0
  let userPageSize = Math.max(1, b.firstPage?.users ?? 64)
  let replyPageSize = Math.max(1, b.firstPage?.replies ?? 64)

  const fill = Effect.suspend(() => {
    const userLimit = u0 === users.length && !usersDone ? userPageSize : 0
    const replyLimit = r0 === replies.length && !repliesDone ? replyPageSize : 0
    return Effect.map(
      store.page(b.conversationId, {
        after: b.start.messageId,
        userBefore,
        userLimit,
        fromTurn: b.start.turnId,
        beforeTurn: b.beforeTurn,
        replyBefore,
        replyLimit
      }),
      (page) => {
        if (userLimit > 0) {
          users = page.users
          u0 = 0
          usersDone = users.length < userLimit
          userPageSize = refill(++userReads)
          if (users.length > 0) userBefore = users[users.length - 1]!.id
        }
        if (replyLimit > 0) {
          replies = page.replies
          r0 = 0
          repliesDone = replies.length < replyLimit
          replyPageSize = refill(++replyReads)
          if (replies.length > 0) replyBefore = replies[replies.length - 1]!.id
        }
      }
    )
  })

  /** The next entry from the buffers, undefined at the end, or FILL when a side must be read first. */
  const step = (): TimelineEntry | undefined | typeof FILL => {
    if (ended) return undefined
    if ((u0 === users.length && !usersDone) || (r0 === replies.length && !repliesDone)) return FILL
    const u = users[u0]
    const r = replies[r0]
    const e = u === undefined ? r : r === undefined ? u : comparePositions(u, r) > 0 ? u : r
    if (e === undefined || (b.floor !== null && comparePositions(e, b.floor) <= 0)) {
      ended = true
      return undefined
    }
    if (e === u) {
      u0++
      usersTaken++
    } else {
      r0++
      repliesTaken++
    }
    return e
  }

  const next: Effect.Effect<Option.Option<TimelineEntry>> = Effect.suspend(() => {
    const e = step()
    return e === FILL ? Effect.zipRight(fill, next) : Effect.succeed(Option.fromNullable(e))
  })

  const walk = (take: (e: TimelineEntry) => boolean): Effect.Effect<void> => {
    const loop = (): Effect.Effect<void> => {
      while (true) {
        const e = step()
        if (e === FILL) return Effect.flatMap(fill, loop)
        if (e === undefined || !take(e)) return Effect.void
      }
    }
    return Effect.suspend(loop)
  }

  return { next, walk, consumed: () => ({ users: usersTaken, replies: repliesTaken }) }
}

/** The next older entry on each run of the returned effect (a timeline's `next`). */
export const timeline = (store: ContextStore.Service, b: TimelineBounds): Effect.Effect<Option.Option<TimelineEntry>> => openTimeline(store, b).next
