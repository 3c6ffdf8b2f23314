/**
 * A conversation's history, newest first: user messages and delivered replies merged from two
 * keyset-paged, indexed queries. Each call of the returned effect yields the next older entry,
 * reading a page only when one side runs dry, and stops at the context start or a summary's end.
 */
import { Effect, Option } from "effect"
import { comparePositions, type ContextStart, type ContextStore, type Position, type TimelineEntry } from "../db/ContextStore.js"
import type { ConversationId } from "../domain/ids.js"

/** Pages grow (64, 128, 256, 512 rows): a short history costs one small read, a long one a few round trips, and little is read past the budget. */
const pageAfter = (page: number) => Math.min(page * 2, 512)

export interface TimelineBounds {
  readonly conversationId: ConversationId
  readonly start: ContextStart
  /** The turn being built: its own replies (of an earlier attempt) are not history. */
  readonly beforeTurn: number
  /** The turn's first new message. */
  readonly beforeMessage: number
  /** The position a summary covers up to (inclusive), if one applies. */
  readonly floor: Position | null
}

export const timeline = (store: ContextStore.Service, b: TimelineBounds): Effect.Effect<Option.Option<TimelineEntry>> => {
  let users: Array<TimelineEntry> = []
  let replies: Array<TimelineEntry> = []
  let u0 = 0
  let r0 = 0
  let userBefore = b.beforeMessage
  let replyBefore = Number.MAX_SAFE_INTEGER
  let usersDone = false
  let repliesDone = false
  let ended = false
  let userPageSize = 64
  let replyPageSize = 64
  const fill = Effect.gen(function* () {
    if (u0 === users.length && !usersDone) {
      const page = yield* store.userPage(b.conversationId, b.start.messageId, userBefore, userPageSize)
      users = [...page]
      u0 = 0
      usersDone = page.length < userPageSize
      userPageSize = pageAfter(userPageSize)
      if (page.length > 0) userBefore = page.at(-1)!.id
    }
    if (r0 === replies.length && !repliesDone) {
      const page = yield* store.replyPage(b.conversationId, b.start.turnId, b.beforeTurn, replyBefore, replyPageSize)
      replies = [...page]
      r0 = 0
      repliesDone = page.length < replyPageSize
      replyPageSize = pageAfter(replyPageSize)
      if (page.length > 0) replyBefore = page.at(-1)!.id
    }
  })
  return Effect.gen(function* () {
    if (ended) return Option.none()
    yield* fill
    const u = users[u0]
    const r = replies[r0]
    const e = u === undefined ? r : r === undefined ? u : comparePositions(u, r) > 0 ? u : r
    if (e === undefined || (b.floor !== null && comparePositions(e, b.floor) <= 0)) {
      ended = true
      return Option.none()
    }
    if (e === u) u0++
    else r0++
    return Option.some(e)
  })
}
