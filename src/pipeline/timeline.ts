/**
 * A conversation's history, newest first: user messages and delivered replies merged from two
 * keyset-paged, indexed queries. Each call of the returned effect yields the next older entry,
 * reading a page only when one side runs dry, and stops at the context start or a summary's end.
 */
import { Effect, Option } from "effect"
import { comparePositions, type ContextStart, type ContextStore, type Position, type TimelineEntry } from "../db/ContextStore.js"
import type { ConversationId } from "../domain/ids.js"

const PAGE = 64

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
  const users: Array<TimelineEntry> = []
  const replies: Array<TimelineEntry> = []
  let userBefore = b.beforeMessage
  let replyBefore = Number.MAX_SAFE_INTEGER
  let usersDone = false
  let repliesDone = false
  let ended = false
  const fill = Effect.gen(function* () {
    if (users.length === 0 && !usersDone) {
      const page = yield* store.userPage(b.conversationId, b.start.messageId, userBefore, PAGE)
      users.push(...page)
      usersDone = page.length < PAGE
      if (page.length > 0) userBefore = page.at(-1)!.id
    }
    if (replies.length === 0 && !repliesDone) {
      const page = yield* store.replyPage(b.conversationId, b.start.turnId, b.beforeTurn, replyBefore, PAGE)
      replies.push(...page)
      repliesDone = page.length < PAGE
      if (page.length > 0) replyBefore = page.at(-1)!.id
    }
  })
  return Effect.gen(function* () {
    if (ended) return Option.none()
    yield* fill
    const u = users[0]
    const r = replies[0]
    const e = u === undefined ? r : r === undefined ? u : comparePositions(u, r) > 0 ? u : r
    if (e === undefined || (b.floor !== null && comparePositions(e, b.floor) <= 0)) {
      ended = true
      return Option.none()
    }
    ;(e === u ? users : replies).shift()
    return Option.some(e)
  })
}
