/**
 * The store guarantees under Postgres's concurrency: two hosts (two pools on one database) racing
 * on the same events and the same conversations. A provider event is one message whoever ingests
 * it; a conversation has one running turn and a message one claim, however many acquire at once.
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import * as Database from "../../src/db/Database.js"
import { type IngestRow, MessageStore } from "../../src/db/MessageStore.js"
import * as Stores from "../../src/db/Stores.js"
import { TurnStore } from "../../src/db/TurnStore.js"
import { ConnectionName, ConversationId, ExecutorId, HostEpoch, WorkspaceId } from "../../src/domain/ids.js"
import { TurnOwner } from "../../src/domain/turn.js"
import { scratchPostgres, stopPostgres } from "../support/db.js"
import { skipWithoutPostgres } from "../support/postgres.js"

const skip = skipWithoutPostgres()
afterAll(stopPostgres)

const row = (conversation: string, eventId: string): IngestRow => ({
  conversationId: ConversationId.make(`terminal:${conversation}`),
  connection: ConnectionName.make("terminal"),
  place: conversation,
  workspace: WorkspaceId.make("main"),
  providerEventId: eventId,
  sender: "me",
  text: `text ${eventId}`,
  metadata: {}
})

/** Two hosts' stores on one fresh database: each its own pool. */
const twoHosts = Effect.gen(function* () {
  const url = Redacted.make(scratchPostgres().createDatabase())
  const hostA = yield* Layer.build(Layer.provideMerge(Stores.layer, Database.layerPostgres(url)))
  const hostB = yield* Layer.build(Layer.provideMerge(Stores.layer, Database.layerPostgres(url, { maxConnections: 4 })))
  return [hostA, hostB] as const
})

describe.skipIf(skip)("Postgres: two hosts on one database", () => {
  it.scoped("the same events ingested by both at once: one message each, the other side a duplicate of it", () =>
    Effect.gen(function* () {
      const hosts = yield* twoHosts
      const events = Array.from({ length: 40 }, (_, i) => row(`c${i % 5}`, `e${i}`))
      // Each host ingests every event, one batch per event, all at once on both.
      const results = yield* Effect.forEach(
        hosts.flatMap((ctx) => events.map((r) => Effect.provide(Effect.flatMap(MessageStore, (s) => s.ingestBatch([r])), ctx))),
        (e) => e,
        { concurrency: "unbounded" }
      )
      const byEvent = new Map<string, Array<{ messageId: number; duplicate: boolean }>>()
      results.forEach(([r], i) => {
        const key = events[i % events.length]!.providerEventId
        byEvent.set(key, [...(byEvent.get(key) ?? []), r!])
      })
      for (const [event, rs] of byEvent) {
        assert.strictEqual(rs.filter((r) => !r.duplicate).length, 1, `${event}: one fresh ingest`)
        assert.strictEqual(new Set(rs.map((r) => r.messageId)).size, 1, `${event}: one message id`)
      }
      // And as batches in the same order, racing whole.
      const batch = events.map((r) => ({ ...r, providerEventId: `b-${r.providerEventId}` }))
      const [a, b] = yield* Effect.all(hosts.map((ctx) => Effect.provide(Effect.flatMap(MessageStore, (s) => s.ingestBatch(batch)), ctx)), { concurrency: 2 })
      batch.forEach((_, i) => {
        assert.strictEqual(a![i]!.messageId, b![i]!.messageId)
        assert.strictEqual(Number(a![i]!.duplicate) + Number(b![i]!.duplicate), 1)
      })
      const messages = yield* Effect.provide(Effect.flatMap(MessageStore, (s) => Effect.forEach(["c0", "c1", "c2", "c3", "c4"], (c) => s.recent(ConversationId.make(`terminal:${c}`), 1000))), hosts[0])
      assert.strictEqual(messages.flat().length, 80)
    }))

  it.scoped("both acquire the same conversations at once: one turn each, every message claimed once", () =>
    Effect.gen(function* () {
      const hosts = yield* twoHosts
      const conversations = Array.from({ length: 20 }, (_, i) => `k${i}`)
      yield* Effect.provide(Effect.flatMap(MessageStore, (s) => s.ingestBatch(conversations.flatMap((c) => [row(c, `${c}-1`), row(c, `${c}-2`)]))), hosts[0])
      const owners = [0, 1].map((h) => TurnOwner.make({ epoch: HostEpoch.make(`host-${h}`), executor: ExecutorId.make(`inproc:${h}`) }))
      // Every conversation asked for by both hosts, several times each, all at once.
      const asks = hosts.flatMap((ctx, h) =>
        [0, 1, 2].flatMap(() => conversations.map((c) =>
          Effect.provide(Effect.flatMap(TurnStore, (t) => t.acquire(ConversationId.make(`terminal:${c}`), owners[h]!, 0)), ctx).pipe(Effect.map((a) => [c, a] as const))
        ))
      )
      const answers = yield* Effect.all(asks, { concurrency: "unbounded" })
      for (const c of conversations) {
        const started = answers.filter(([k, a]) => k === c && a._tag === "Started")
        assert.strictEqual(started.length, 1, `${c}: one turn started`)
        const claimed = started.flatMap(([, a]) => a._tag === "Started" ? a.messageIds : [])
        assert.strictEqual(claimed.length, 2, `${c}: both messages claimed by it`)
      }
      assert.isTrue(answers.every(([, a]) => a._tag === "Started" || a._tag === "Busy"))
    }))
})
