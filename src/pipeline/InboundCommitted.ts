/**
 * Inbound messages as this process's Ingest commits them, for what acts on a message once it is
 * durable (approvals read their replies here). A PubSub of the pipeline's own, until the host's
 * event bus takes its place.
 */
import { Context, Effect, Layer, PubSub, Queue, type Scope } from "effect"
import type { ConversationId, MessageId } from "../domain/ids.js"

export interface CommittedInbound {
  readonly conversationId: ConversationId
  readonly messageId: MessageId
  readonly sender: string
  readonly text: string
}

export declare namespace InboundCommitted {
  export interface Service {
    /**
     * Ingest calls it after a commit and before it resumes the batch's callers, so a message whose
     * caller saw it committed is already queued for every consumer. Duplicates are not published.
     */
    readonly publish: (messages: ReadonlyArray<CommittedInbound>) => Effect.Effect<void>
    /**
     * Handles each message committed from now on, in a fiber of the current scope. When the scope
     * closes, the message in hand is finished and those already queued are handled before it
     * ends: a short-lived process (`pynchy send`) does not exit with a committed message unread.
     * A defect in `handle` is logged; the next message is handled as usual.
     */
    readonly consume: <R>(handle: (message: CommittedInbound) => Effect.Effect<void, never, R>) => Effect.Effect<void, never, Scope.Scope | R>
  }
}

export class InboundCommitted extends Context.Tag("pynchy/InboundCommitted")<InboundCommitted, InboundCommitted.Service>() {
  static readonly make = Effect.gen(function* () {
    const pubsub = yield* Effect.acquireRelease(PubSub.unbounded<CommittedInbound>(), PubSub.shutdown)

    const consume: InboundCommitted.Service["consume"] = (handle) =>
      Effect.gen(function* () {
        const safe = (message: CommittedInbound) =>
          Effect.catchAllCause(handle(message), (cause) => Effect.logWarning("a committed inbound message was not handled", cause))
        const dequeue = yield* PubSub.subscribe(pubsub)
        // Runs after the loop below is interrupted (finalizers run in reverse).
        yield* Effect.addFinalizer(() => Effect.flatMap(Queue.takeAll(dequeue), (rest) => Effect.forEach(rest, safe, { discard: true })))
        // Taking is interruptible; a message once taken is handled to the end.
        yield* Effect.forkScoped(Effect.forever(Effect.uninterruptibleMask((restore) => Effect.flatMap(restore(Queue.take(dequeue)), safe))))
      })

    return InboundCommitted.of({
      publish: (messages) => (messages.length === 0 ? Effect.void : Effect.asVoid(PubSub.publishAll(pubsub, messages))),
      consume
    })
  })

  static readonly layer = Layer.scoped(InboundCommitted, InboundCommitted.make)
}
