import { Context, Deferred, Effect, Either, Layer, Queue, Schema } from "effect"
import { type IngestRow, MessageStore } from "../db/MessageStore.js"
import { InvalidInput, type NoRoute } from "../domain/errors.js"
import { conversationIdOf } from "../domain/ids.js"
import { type Ingested, InboundMessageInput } from "../domain/message.js"
import { problemsOf } from "../domain/problems.js"
import { TurnSignal } from "./TurnSignal.js"
import { Workspaces } from "./Workspaces.js"

/** Most rows one group commit writes: bounds the time one transaction holds the connection. */
const MAX_BATCH = 256

interface Pending {
  readonly row: IngestRow
  readonly done: Deferred.Deferred<Ingested>
}

export declare namespace Ingest {
  /** Durable, deduplicated intake of provider messages. */
  export interface Service {
    /**
     * Decodes the payload, routes it to a conversation, and commits receipt + message (+ cursor)
     * in one transaction; resolves only after the commit. A known provider event resolves to the
     * original message with `duplicate: true` and changes nothing.
     */
    readonly ingest: (input: unknown) => Effect.Effect<Ingested, InvalidInput | NoRoute>
  }
}

export class Ingest extends Context.Tag("pynchy/Ingest")<Ingest, Ingest.Service>() {
  static readonly make = Effect.gen(function* () {
    const store = yield* MessageStore
    const workspaces = yield* Workspaces
    const signals = yield* TurnSignal
    const decode = Schema.decodeUnknownEither(InboundMessageInput)
    const pending = yield* Queue.unbounded<Pending>()

    // Group commit: whatever is waiting when the writer comes round shares one transaction,
    // and every caller is resumed after that commit. One caller alone commits at once.
    const writer = Effect.gen(function* () {
      while (true) {
        const batch = yield* Queue.takeBetween(pending, 1, MAX_BATCH)
        const items = [...batch]
        const results = yield* store.ingestBatch(items.map((p) => p.row)).pipe(Effect.exit)
        if (results._tag === "Failure") {
          yield* Effect.forEach(items, (p) => Deferred.failCause(p.done, results.cause), { discard: true })
          continue
        }
        yield* Effect.forEach(items, (p, i) => Deferred.succeed(p.done, results.value[i]!), { discard: true })
        const fresh = new Set(results.value.filter((r) => !r.duplicate).map((r) => r.conversationId))
        yield* Effect.forEach(fresh, signals.signal, { discard: true })
      }
    })
    yield* Effect.forkScoped(writer)

    const ingest = Effect.fn("Ingest.ingest")(function* (input: unknown) {
      const decoded = decode(input, { errors: "all", onExcessProperty: "error" })
      if (Either.isLeft(decoded)) return yield* new InvalidInput({ what: "ingest payload", problems: problemsOf(decoded.left) })
      const m = decoded.right
      const route = yield* workspaces.route(m.connection, m.place)
      const done = yield* Deferred.make<Ingested>()
      yield* Queue.offer(pending, {
        done,
        row: {
          conversationId: conversationIdOf(m.connection, m.place),
          connection: m.connection,
          place: m.place,
          workspace: route.workspace,
          providerEventId: m.providerEventId,
          sender: m.sender,
          text: m.text,
          metadata: m.metadata,
          cursor: m.cursor
        }
      })
      return yield* Deferred.await(done)
    })

    return Ingest.of({ ingest })
  })

  static readonly layer = Layer.scoped(Ingest, Ingest.make)
}
