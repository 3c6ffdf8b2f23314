import { Context, Effect, Either, Exit, Layer, Schema } from "effect"
import { type IngestRow, MessageStore } from "../db/MessageStore.js"
import { InvalidInput, type NoRoute } from "../domain/errors.js"
import { EventBus, type Publishable } from "../events/EventBus.js"
import { conversationIdOf } from "../domain/ids.js"
import { type Ingested, InboundMessageInput } from "../domain/message.js"
import { problemsOf } from "../domain/problems.js"
import { type CommittedInbound, InboundCommitted } from "./InboundCommitted.js"
import { TurnSignal } from "./TurnSignal.js"
import { Workspaces } from "./Workspaces.js"

/** Most rows one group commit writes: bounds the time one transaction holds the connection. */
const MAX_BATCH = 256

interface Pending {
  readonly row: IngestRow
  readonly resume: (exit: Exit.Exit<Ingested>) => void
}

// The struct of the class's fields: the same rules, without constructing a class instance per message.
const decode = Schema.decodeUnknownEither(Schema.Struct(InboundMessageInput.fields))

export declare namespace Ingest {
  /** Durable, deduplicated intake of provider messages. */
  export interface Service {
    /**
     * Decodes the payload, routes it to a conversation, and commits receipt + message (+ cursor)
     * in one transaction; resolves only after the commit. A known provider event resolves to the
     * original message with `duplicate: true` and changes nothing but the cursor; if it was
     * ingested with another `fingerprint`, also `conflict: true`, and it changes nothing at all.
     */
    readonly ingest: (input: unknown) => Effect.Effect<Ingested, InvalidInput | NoRoute>
  }
}

export class Ingest extends Context.Tag("pynchy/Ingest")<Ingest, Ingest.Service>() {
  static readonly make = Effect.gen(function* () {
    const store = yield* MessageStore
    const workspaces = yield* Workspaces
    const signals = yield* TurnSignal
    // What acts on a committed message (a reply like `approve k3x9q2` deciding an approval) reads it here.
    const committed = yield* InboundCommitted
    const bus = yield* EventBus

    // Group commit: whatever is waiting when the writer comes round shares one transaction, and
    // every caller is resumed after that commit. One caller alone commits at once. This is the
    // hot path: a plain array and a latch rather than a queue and a deferred per message.
    let waiting: Array<Pending> = []
    const wake = yield* Effect.makeLatch(false)

    const writeBatch = (items: ReadonlyArray<Pending>) =>
      Effect.gen(function* () {
        const results = yield* Effect.exit(store.ingestBatch(items.map((p) => p.row)))
        if (Exit.isFailure(results)) {
          for (const p of items) p.resume(Exit.failCause(results.cause))
          return
        }
        const published: Array<CommittedInbound> = []
        const events: Array<Publishable> = []
        results.value.forEach((r, i) => {
          const { connection, place, providerEventId, workspace } = items[i]!.row
          if (!r.duplicate) published.push({ conversationId: r.conversationId, messageId: r.messageId, sender: items[i]!.row.sender, text: items[i]!.row.text })
          events.push(r.duplicate
            ? { type: "message.deduplicated", messageId: r.messageId, conversationId: r.conversationId, connection, place, providerEventId, conflict: r.conflict === true }
            : { type: "message.ingested", messageId: r.messageId, conversationId: r.conversationId, workspace, connection, place, providerEventId })
        })
        yield* bus.publishAll(events)
        yield* committed.publish(published)
        items.forEach((p, i) => p.resume(Exit.succeed(results.value[i]!)))
        const fresh = new Set(published.map((m) => m.conversationId))
        yield* Effect.forEach(fresh, signals.signal, { discard: true })
      })

    yield* Effect.forkScoped(Effect.forever(Effect.gen(function* () {
      yield* wake.await
      yield* wake.close
      while (waiting.length > 0) {
        const batch = waiting.length <= MAX_BATCH ? waiting : waiting.slice(0, MAX_BATCH)
        waiting = waiting.length <= MAX_BATCH ? [] : waiting.slice(MAX_BATCH)
        yield* writeBatch(batch)
      }
    })))

    const ingest = (input: unknown): Effect.Effect<Ingested, InvalidInput | NoRoute> =>
      Effect.suspend((): Effect.Effect<Ingested, InvalidInput | NoRoute> => {
        const decoded = decode(input, { errors: "all", onExcessProperty: "error" })
        if (Either.isLeft(decoded)) return Effect.fail(new InvalidInput({ what: "ingest payload", problems: problemsOf(decoded.left) }))
        const m = decoded.right
        const routed = workspaces.route(m.connection, m.place).pipe(Effect.tapError((e) =>
          bus.publish({ type: "message.no_route", conversationId: conversationIdOf(m.connection, m.place), connection: m.connection, place: m.place, providerEventId: m.providerEventId, disabled: e.disabled })
        ))
        return Effect.flatMap(routed, (route) =>
          Effect.async<Ingested>((resume) => {
            waiting.push({
              resume,
              row: {
                conversationId: conversationIdOf(m.connection, m.place),
                connection: m.connection,
                place: m.place,
                workspace: route.workspace,
                providerEventId: m.providerEventId,
                sender: m.sender,
                text: m.text,
                metadata: m.metadata,
                fingerprint: m.fingerprint,
                cursor: m.cursor
              }
            })
            // Committed rows are durable whether or not the caller still waits: no canceller.
            wake.unsafeOpen()
          })
        )
      })

    return Ingest.of({ ingest })
  })

  static readonly layer = Layer.scoped(Ingest, Ingest.make)
}
