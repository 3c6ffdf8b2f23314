/**
 * Ingest.ingestMany, the burst a channel hands over for a page of its backlog: each payload's
 * outcome is its own (a refused or unrouted one changes nothing for the others), the rest commit
 * in order (ids ascending, the last cursor kept), a repeat inside the burst is its original's
 * duplicate, and every fresh message is answered.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Layer, Option } from "effect"
import { makeTestHost } from "../../layers/test.js"
import { MessageStore } from "../../src/db/MessageStore.js"
import { ConnectionName, ConversationId } from "../../src/domain/ids.js"
import { Ingest } from "../../src/pipeline/Ingest.js"
import { tempDir } from "../support/db.js"
import { awaitSettled, recordingConfig, sentLines } from "../support/host.js"

const msg = (id: string, place: string, order: number, extra: Record<string, unknown> = {}) => ({
  connection: "test",
  place,
  providerEventId: id,
  sender: "u",
  text: `text of ${id}`,
  cursor: { stream: "updates", position: `after-${id}`, order },
  ...extra
})

describe("Ingest.ingestMany", () => {
  it.scopedLive("each payload has its own outcome; the rest commit in order, the last cursor kept, and every fresh message is answered", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const ctx = yield* Layer.build(makeTestHost(recordingConfig(dir)))
      const { ingestMany } = yield* Effect.provide(Ingest, ctx)
      const store = yield* Effect.provide(MessageStore, ctx)

      const outcomes = yield* ingestMany([
        msg("a1", "x", 1),
        msg("bad", "x", 2, { sender: "" }),
        { ...msg("lost", "x", 3), connection: "nowhere" },
        msg("a2", "x", 4),
        msg("a1", "x", 5),
        msg("a3", "y", 6)
      ])
      assert.deepStrictEqual(outcomes.map((o) => (Either.isRight(o) ? (o.right.duplicate ? "duplicate" : "fresh") : o.left._tag)), [
        "fresh", "InvalidInput", "NoRoute", "fresh", "duplicate", "fresh"
      ])
      const ids = outcomes.map((o) => (Either.isRight(o) ? o.right.messageId : undefined))
      assert.isTrue(ids[0]! < ids[3]! && ids[3]! < ids[5]!, "committed in the order given")
      assert.strictEqual(ids[4], ids[0], "a repeat inside the burst is its original")
      const bad = outcomes[1]!
      assert.deepStrictEqual(Either.isLeft(bad) && bad.left._tag === "InvalidInput" ? bad.left.problems.map((p) => p.path) : [], ["sender"])

      const cursor = yield* store.cursor(ConnectionName.make("test"), "updates")
      assert.deepStrictEqual(Option.map(cursor, (c): [string, number] => [c.position, c.order]), Option.some<[string, number]>(["after-a3", 6]))

      // a1 and a2 arrived together: one turn may answer both.
      yield* awaitSettled(ConversationId.make("test:x"), 1).pipe(Effect.provide(ctx))
      yield* awaitSettled(ConversationId.make("test:y"), 1).pipe(Effect.provide(ctx))
      assert.sameMembers([...new Set(sentLines(dir).filter((l) => l.kind === "reply").map((l) => l.conversation))], ["test:x", "test:y"])
    }))

  it.scopedLive("an empty burst commits nothing; ingest is a burst of one", () =>
    Effect.gen(function* () {
      const ctx = yield* Layer.build(makeTestHost(recordingConfig()))
      const { ingest, ingestMany } = yield* Effect.provide(Ingest, ctx)
      assert.deepStrictEqual(yield* ingestMany([]), [])
      const one = yield* ingest(msg("b1", "z", 1))
      const again = yield* ingestMany([msg("b1", "z", 2)])
      assert.deepStrictEqual(again.map((o) => Either.map(o, (r) => [r.messageId, r.duplicate])), [Either.right([one.messageId, true])])
    }))
})
