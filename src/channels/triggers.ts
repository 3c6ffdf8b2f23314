/**
 * Group-chat triggers, for every channel that knows group chats. In a direct chat every message
 * is answered. In a group, a message is answered when it uses the route's `trigger` (as a word,
 * any case) or mentions the bot (its @name, or a reply to one of its messages); every other
 * message is ingested with the `untriggered` flag: stored, shown to the agent as context in the
 * next turn, but never answered on its own (TurnRunner).
 */
import { UNTRIGGERED } from "../domain/message.js"

export interface TriggerCheck {
  readonly text: string
  /** A one-to-one chat: always answered. */
  readonly direct: boolean
  /** The route's trigger word, if any. */
  readonly trigger: string | undefined
  /** The bot's own handle (`@name`), if the platform has one. */
  readonly handle: string | undefined
  /** The message answers one of the bot's own. */
  readonly repliesToBot: boolean
  /** The platform says the message mentions the bot (Discord's `mentions`, whatever the text shows). */
  readonly mentionsBot?: boolean
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
const usesWord = (text: string, word: string) => new RegExp(`(^|[^\\p{L}\\p{N}_])${escapeRegExp(word)}($|[^\\p{L}\\p{N}_])`, "iu").test(text)

export const isTriggered = (check: TriggerCheck): boolean =>
  check.direct ||
  check.repliesToBot ||
  check.mentionsBot === true ||
  (check.trigger !== undefined && usesWord(check.text, check.trigger)) ||
  (check.handle !== undefined && usesWord(check.text, check.handle)) ||
  // A group route without a trigger word and a bot without a handle: nothing to wait for.
  (check.trigger === undefined && check.handle === undefined)

/** The metadata to ingest an untriggered message with. */
export const untriggeredMetadata = { [UNTRIGGERED]: true } as const

/** The route of a place: the one naming it, else the connection's `*` route. */
export const routeOf = <R extends { readonly place: string }>(routes: ReadonlyArray<R>, place: string): R | undefined =>
  routes.find((r) => r.place === place) ?? routes.find((r) => r.place === "*")
