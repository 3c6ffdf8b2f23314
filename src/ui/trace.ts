/**
 * The trace of one message for the Control UI: `pynchy trace`'s story (src/events/trace.ts, read
 * from the database) as steps for a page, with the message's text and its verdict.
 */
import { Effect, Option } from "effect"
import { MessageStore } from "../db/MessageStore.js"
import { MessageId } from "../domain/ids.js"
import type { Message } from "../domain/message.js"
import type { HostEvent } from "../events/HostEvent.js"
import { trace } from "../events/trace.js"
import { describe, type Verdict } from "../events/trace-verdict.js"

export interface TraceStep {
  readonly at: number
  readonly what: string
  readonly detail: string
  readonly outcome: "ok" | "waiting" | "failed"
}

export interface MessageTrace {
  readonly message: Message
  readonly steps: ReadonlyArray<TraceStep>
  readonly verdict: Verdict
}

const FAILED = /(failed|unknown|no_route|budget_exceeded|unready|dropped|skipped)$/
const WAITING = /(queued|retried|asked|started)$/

const stepOf = (e: HostEvent): TraceStep => ({
  at: e.at,
  what: e.type,
  detail: describe(e),
  outcome: FAILED.test(e.type) || ("outcome" in e && e.outcome !== "ok" && e.type === "gateway.call") ? "failed" : WAITING.test(e.type) ? "waiting" : "ok"
})

/** None when no inbound message has this id. The UI runs in the host, so the host is running. */
export const traceOfMessage = (id: number) =>
  Effect.gen(function* () {
    const message = yield* Effect.flatMap(MessageStore, (s) => s.get(MessageId.make(id)))
    if (Option.isNone(message) || message.value.direction !== "in") return Option.none<MessageTrace>()
    const story = yield* trace(String(id), true).pipe(Effect.option)
    return Option.map(story, (t): MessageTrace => ({ message: message.value, steps: t.events.map(stepOf), verdict: t.verdict }))
  })
