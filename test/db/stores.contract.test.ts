import { SqlClient } from "@effect/sql"
import { afterAll, assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Option } from "effect"
import { ConnectionName, ConversationId, ExecutorId, HostEpoch, WorkspaceId } from "../../src/domain/ids.js"
import { TurnOwner } from "../../src/domain/turn.js"
import { Workspace } from "../../src/domain/workspace.js"
import { DeliveryStore } from "../../src/db/DeliveryStore.js"
import { HostStore } from "../../src/db/HostStore.js"
import { type IngestRow, MessageStore } from "../../src/db/MessageStore.js"
import { TurnStore } from "../../src/db/TurnStore.js"
import { WorkspaceStore } from "../../src/db/WorkspaceStore.js"
import { databases, stopPostgres, storesOn } from "../support/db.js"

const conv = ConversationId.make("terminal:a")
const row = (eventId: string, extra: Partial<IngestRow> = {}): IngestRow => ({
  conversationId: conv,
  connection: ConnectionName.make("terminal"),
  place: "a",
  workspace: WorkspaceId.make("main"),
  providerEventId: eventId,
  sender: "me",
  text: `text ${eventId}`,
  metadata: {},
  ...extra
})
const epoch = HostEpoch.make("e1")
const owner = TurnOwner.make({ epoch, executor: ExecutorId.make("inproc:1") })

afterAll(stopPostgres)

describe.each(databases())("stores on the $name database", ({ layer }) => {
  const run = <A, E>(effect: Effect.Effect<A, E, MessageStore | TurnStore | DeliveryStore | WorkspaceStore | HostStore | SqlClient.SqlClient>) =>
    Effect.provide(effect, storesOn(layer()))

  it.effect("a delivery's audio is stored once: the first bytes win, read back byte for byte, with their format", () =>
    run(Effect.gen(function* () {
      const store = yield* DeliveryStore
      const first = { format: "wav" as const, bytes: new Uint8Array([82, 73, 70, 70, 0, 255, 1, 2]) }
      assert.deepStrictEqual(yield* store.storeAudio("t1:0", first), first)
      const again = yield* store.storeAudio("t1:0", { format: "ogg_opus", bytes: new Uint8Array([9]) })
      assert.deepStrictEqual(again, first)
      assert.deepStrictEqual(Option.getOrUndefined(yield* store.audioOf("t1:0")), first)
      assert.isTrue(Option.isNone(yield* store.audioOf("t1:1")))
      assert.deepStrictEqual([...(yield* store.audioFormats(["t1:0", "t1:1"]))], [["t1:0", "wav"]])
    })))

  it.effect("a delivery's files are stored once, numbered from 1, read back byte for byte; lists carry no bytes", () =>
    run(Effect.gen(function* () {
      const store = yield* DeliveryStore
      const files = [{ name: "a.png", mimeType: "image/png", bytes: new Uint8Array([0, 255, 1]) }, { name: "b.txt", mimeType: "text/plain", bytes: new Uint8Array([104, 105]) }]
      yield* store.storeFiles("t2:0", files)
      yield* store.storeFiles("t2:0", [{ name: "other.pdf", mimeType: "application/pdf", bytes: new Uint8Array([9]) }])
      assert.deepStrictEqual(yield* store.filesOf("t2:0"), files.map((f, i) => ({ n: i + 1, ...f })))
      assert.deepStrictEqual(yield* store.filesOf("t2:1"), [])
      assert.deepStrictEqual([...(yield* store.fileLists(["t2:0", "t2:1"]))], [["t2:0", [{ n: 1, name: "a.png", mimeType: "image/png" }, { n: 2, name: "b.txt", mimeType: "text/plain" }]]])
    })))

  it.effect("ingest writes a receipt per provider event and dedups repeats, in and across batches", () =>
    run(Effect.gen(function* () {
      const store = yield* MessageStore
      const first = yield* store.ingestBatch([row("e1"), row("e2"), row("e1")])
      assert.deepStrictEqual(first.map((r) => r.duplicate), [false, false, true])
      assert.strictEqual(first[0]!.messageId, first[2]!.messageId)
      const again = yield* store.ingestBatch([row("e2"), row("e3")])
      assert.deepStrictEqual(again.map((r) => r.duplicate), [true, false])
      assert.strictEqual(again[0]!.messageId, first[1]!.messageId)
      const msgs = yield* store.recent(conv, 10)
      assert.deepStrictEqual(msgs.map((m) => m.text), ["text e1", "text e2", "text e3"])
    })))

  it.effect("a fingerprint tells a retry from a reused event id: same is a duplicate, another a conflict that writes nothing", () =>
    run(Effect.gen(function* () {
      const store = yield* MessageStore
      const sql = yield* SqlClient.SqlClient
      const c = ConnectionName.make("terminal")
      const [first] = yield* store.ingestBatch([row("k", { fingerprint: "A", cursor: { stream: "s", position: "p1", order: 1 } })])
      assert.deepStrictEqual([first!.duplicate, first!.conflict], [false, false])
      const [same] = yield* store.ingestBatch([row("k", { fingerprint: "A", text: "ignored" })])
      assert.deepStrictEqual([same!.duplicate, same!.conflict, same!.messageId], [true, false, first!.messageId])
      const [other] = yield* store.ingestBatch([row("k", { fingerprint: "B", text: "other content", cursor: { stream: "s", position: "p2", order: 2 } })])
      assert.deepStrictEqual([other!.duplicate, other!.conflict, other!.messageId], [true, true, first!.messageId])
      // Nothing written for the conflict: no message, the cursor where it was.
      assert.deepStrictEqual((yield* store.recent(conv, 10)).map((m) => m.text), ["text k"])
      assert.strictEqual(Option.getOrThrow(yield* store.cursor(c, "s")).position, "p1")
      // The fingerprint is the receipt's, stored in the same row.
      const stored = yield* sql<{ fingerprint: string | null }>`SELECT fingerprint FROM receipts WHERE provider_event_id = 'k'`
      assert.deepStrictEqual(stored.map((r) => r.fingerprint), ["A"])
      // No fingerprint on either side: a duplicate, as before fingerprints existed.
      const [bare] = yield* store.ingestBatch([row("k")])
      assert.deepStrictEqual([bare!.duplicate, bare!.conflict], [true, false])
      const [plain] = yield* store.ingestBatch([row("n")])
      const [late] = yield* store.ingestBatch([row("n", { fingerprint: "B", text: "later content" })])
      assert.deepStrictEqual([late!.duplicate, late!.conflict, late!.messageId], [true, false, plain!.messageId])
      const unfingerprinted = yield* sql<{ fingerprint: string | null }>`SELECT fingerprint FROM receipts WHERE provider_event_id = 'n'`
      assert.deepStrictEqual(unfingerprinted.map((r) => r.fingerprint), [null])
    })))

  it.effect("inside one batch, repeats of an event id compare with the first row's fingerprint", () =>
    run(Effect.gen(function* () {
      const store = yield* MessageStore
      const c = ConnectionName.make("terminal")
      const results = yield* store.ingestBatch([
        row("r", { fingerprint: "A", text: "winner", cursor: { stream: "s", position: "p1", order: 1 } }),
        row("r", { fingerprint: "B", text: "loser", cursor: { stream: "s", position: "p9", order: 9 } }),
        row("r", { fingerprint: "A", text: "retry" }),
        row("r", { text: "no fingerprint" })
      ])
      assert.deepStrictEqual(results.map((r) => [r.duplicate, r.conflict]), [[false, false], [true, true], [true, false], [true, false]])
      assert.strictEqual(new Set(results.map((r) => r.messageId)).size, 1)
      assert.deepStrictEqual((yield* store.recent(conv, 10)).map((m) => m.text), ["winner"])
      // The conflicting row's cursor did not move the stream.
      assert.strictEqual(Option.getOrThrow(yield* store.cursor(c, "s")).position, "p1")
    })))

  it.effect("the receipt constraint holds in the schema itself", () =>
    run(Effect.gen(function* () {
      const store = yield* MessageStore
      const sql = yield* SqlClient.SqlClient
      const [r] = yield* store.ingestBatch([row("x")])
      const exit = yield* Effect.exit(sql`INSERT INTO receipts (connection, provider_event_id, message_id) VALUES ('terminal', 'x', ${r!.messageId})`)
      assert.isTrue(Exit.isFailure(exit))
    })))

  it.effect("cursors move forward only, including through ingest", () =>
    run(Effect.gen(function* () {
      const store = yield* MessageStore
      const c = ConnectionName.make("terminal")
      yield* store.ingestBatch([row("a", { cursor: { stream: "s", position: "p5", order: 5 } })])
      assert.strictEqual(Option.getOrThrow(yield* store.cursor(c, "s")).position, "p5")
      assert.isFalse(yield* store.advanceCursor(c, "s", "p3", 3))
      // A duplicate still carries its cursor forward.
      yield* store.ingestBatch([row("a", { cursor: { stream: "s", position: "p9", order: 9 } })])
      assert.strictEqual(Option.getOrThrow(yield* store.cursor(c, "s")).position, "p9")
      assert.isTrue(yield* store.advanceCursor(c, "s", "p10", 10))
      assert.isTrue(Option.isNone(yield* store.cursor(c, "other")))
    })))

  it.effect("a turn claims every pending message; one active turn per conversation", () =>
    run(Effect.gen(function* () {
      const messages = yield* MessageStore
      const turns = yield* TurnStore
      yield* messages.ingestBatch([row("1"), row("2")])
      const a = yield* turns.acquire(conv, owner, 1)
      assert.strictEqual(a._tag, "Started")
      if (a._tag !== "Started") return
      assert.strictEqual(a.messageIds.length, 2)
      yield* messages.ingestBatch([row("3")])
      assert.strictEqual((yield* turns.acquire(conv, owner, 2))._tag, "Busy")
      assert.isTrue(yield* turns.complete(a.turn.id, epoch))
      const handled = yield* messages.byIds(a.messageIds)
      assert.deepStrictEqual(handled.map((m) => m.handledBy), [a.turn.id, a.turn.id])
      const b = yield* turns.acquire(conv, owner, 3)
      assert.strictEqual(b._tag, "Started")
      if (b._tag === "Started") assert.strictEqual(b.messageIds.length, 1)
    })))

  it.effect("the schema refuses a second active turn and a second claim", () =>
    run(Effect.gen(function* () {
      const messages = yield* MessageStore
      const turns = yield* TurnStore
      const sql = yield* SqlClient.SqlClient
      const [m] = yield* messages.ingestBatch([row("1")])
      const a = yield* turns.acquire(conv, owner, 1)
      if (a._tag !== "Started") return assert.fail("not started")
      const secondTurn = yield* Effect.exit(sql`INSERT INTO turns (conversation_id, status, created_at, updated_at) VALUES (${conv}, 'queued', 0, 0)`)
      assert.isTrue(Exit.isFailure(secondTurn))
      const secondClaim = yield* Effect.exit(sql`INSERT INTO delivery_claims (message_id, turn_id) VALUES (${m!.messageId}, ${a.turn.id})`)
      assert.isTrue(Exit.isFailure(secondClaim))
    })))

  it.effect("retries wait for their time; transitions are fenced on the owner epoch", () =>
    run(Effect.gen(function* () {
      const messages = yield* MessageStore
      const turns = yield* TurnStore
      yield* messages.ingestBatch([row("1")])
      const a = yield* turns.acquire(conv, owner, 1)
      if (a._tag !== "Started") return assert.fail("not started")
      assert.isFalse(yield* turns.complete(a.turn.id, HostEpoch.make("stale")))
      assert.isTrue(yield* turns.retryLater(a.turn.id, epoch, "boom", 100))
      const later = yield* turns.acquire(conv, owner, 50)
      assert.deepStrictEqual(later._tag === "Later" ? later.at : -1, 100)
      const again = yield* turns.acquire(conv, owner, 100)
      if (again._tag !== "Started") return assert.fail("not resumed")
      assert.strictEqual(again.turn.id, a.turn.id)
      assert.strictEqual(again.turn.attempts, 2)
      assert.isTrue(yield* turns.fail(again.turn.id, epoch, "gave up"))
      assert.strictEqual((yield* turns.acquire(conv, owner, 200))._tag, "Idle")
    })))

  it.effect("a blocked turn is final like a completed one: messages handled, claims dropped, fenced, not acquired again", () =>
    run(Effect.gen(function* () {
      const messages = yield* MessageStore
      const turns = yield* TurnStore
      yield* messages.ingestBatch([row("1")])
      const a = yield* turns.acquire(conv, owner, 1)
      if (a._tag !== "Started") return assert.fail("not started")
      assert.isFalse(yield* turns.block(a.turn.id, HostEpoch.make("stale"), "needs_input"))
      assert.isTrue(yield* turns.block(a.turn.id, epoch, "needs_input"))
      const stored = Option.getOrThrow(yield* turns.get(a.turn.id))
      assert.deepStrictEqual([stored.status, stored.error, stored.attempts], ["blocked", "needs_input", 1])
      assert.deepStrictEqual((yield* messages.byIds(a.messageIds)).map((m) => m.handledBy), [a.turn.id])
      assert.deepStrictEqual(yield* turns.claimsOf(a.turn.id), [])
      assert.strictEqual((yield* turns.acquire(conv, owner, 2))._tag, "Idle")
      assert.deepStrictEqual((yield* turns.latestBlocked(10)).map((t) => t.id), [a.turn.id])
      // The next message is a new turn; once it completes the conversation is no longer blocked.
      yield* messages.ingestBatch([row("2")])
      const b = yield* turns.acquire(conv, owner, 3)
      if (b._tag !== "Started") return assert.fail("the next message did not start a turn")
      assert.notStrictEqual(b.turn.id, a.turn.id)
      assert.isTrue(yield* turns.complete(b.turn.id, epoch))
      assert.deepStrictEqual(yield* turns.latestBlocked(10), [])
      assert.deepStrictEqual(yield* turns.countByStatus, { blocked: 1, completed: 1 })
    })))

  it.effect("orphan release interrupts dead executors' turns and keeps survivors' claims", () =>
    run(Effect.gen(function* () {
      const messages = yield* MessageStore
      const turns = yield* TurnStore
      const other = ConversationId.make("terminal:b")
      yield* messages.ingestBatch([row("1"), row("2", { conversationId: other, place: "b" })])
      const dead = yield* turns.acquire(conv, TurnOwner.make({ epoch, executor: ExecutorId.make("dead") }), 1)
      const live = yield* turns.acquire(other, TurnOwner.make({ epoch, executor: ExecutorId.make("alive") }), 1)
      if (dead._tag !== "Started" || live._tag !== "Started") return assert.fail("not started")
      const next = HostEpoch.make("e2")
      const result = yield* turns.releaseOrphans(next, (ex) => Effect.succeed(ex === "alive"))
      assert.deepStrictEqual(result.interrupted, [dead.turn.id])
      assert.strictEqual(result.releasedClaims, 1)
      assert.deepStrictEqual(result.survivors.map((t) => t.id), [live.turn.id])
      assert.deepStrictEqual(yield* turns.claimsOf(live.turn.id), live.messageIds)
      assert.deepStrictEqual(yield* turns.claimsOf(dead.turn.id), [])
      assert.deepStrictEqual([...(yield* turns.conversationsWithWork)], [conv])
      const resumed = yield* turns.acquire(conv, TurnOwner.make({ epoch: next, executor: ExecutorId.make("new") }), 2)
      if (resumed._tag !== "Started") return assert.fail("interrupted turn not resumed")
      assert.strictEqual(resumed.turn.id, dead.turn.id)
      assert.isTrue(yield* turns.complete(live.turn.id, next))
    })))

  it.effect("deliveries: keys are unique, outcomes final, attempts durable", () =>
    run(Effect.gen(function* () {
      const messages = yield* MessageStore
      const deliveries = yield* DeliveryStore
      yield* messages.ingestBatch([row("1")])
      const d = { idempotencyKey: "t1:0", conversationId: conv, turnId: null, kind: "reply" as const, text: "hi" }
      const [first] = yield* deliveries.record([d])
      const [again] = yield* deliveries.record([{ ...d, text: "changed" }])
      assert.isTrue(first!.created)
      assert.isFalse(again!.created)
      assert.strictEqual(first!.delivery.id, again!.delivery.id)
      assert.strictEqual(again!.delivery.text, "hi")
      assert.deepStrictEqual(yield* deliveries.conversationsWithPending("terminal"), [conv])
      assert.deepStrictEqual(yield* deliveries.conversationsWithPending("matrix"), [])
      assert.strictEqual((yield* deliveries.pendingOf(conv)).length, 1)
      const id = first!.delivery.id
      assert.strictEqual(yield* deliveries.beginAttempt(id), 1)
      assert.strictEqual((yield* deliveries.pending).length, 1)
      assert.isTrue(yield* deliveries.settle(id, "sent"))
      assert.isFalse(yield* deliveries.settle(id, "failed", "late"))
      assert.deepStrictEqual(yield* deliveries.countByStatus, { sent: 1 })
    })))

  it.effect("workspaces register durably; session bindings replace", () =>
    run(Effect.gen(function* () {
      const messages = yield* MessageStore
      const store = yield* WorkspaceStore
      yield* store.register(Workspace.make({ id: WorkspaceId.make("w1"), instructions: "one" }))
      yield* store.register(Workspace.make({ id: WorkspaceId.make("w1"), instructions: "two" }))
      const all = yield* store.registered
      assert.deepStrictEqual(all.map((w) => w.instructions), ["two"])
      yield* messages.ingestBatch([row("1")])
      yield* store.bindSession({ conversationId: conv, kind: "llm", ref: "s1" })
      yield* store.bindSession({ conversationId: conv, kind: "attachment", ref: "7" })
      assert.strictEqual(Option.getOrThrow(yield* store.sessionBinding(conv)).ref, "7")
    })))

  it.effect("host runs and table counts", () =>
    run(Effect.gen(function* () {
      const host = yield* HostStore
      yield* host.recordStart({ epoch, pid: 1, version: "0.1.0" })
      yield* host.recordReady(epoch)
      const last = Option.getOrThrow(yield* host.lastRun)
      assert.strictEqual(last.epoch, "e1")
      assert.isNotNull(last.readyAt)
      const counts = yield* host.tableCounts
      assert.strictEqual(counts.host_runs, 1)
      assert.strictEqual(counts.messages, 0)
    })))

  it.effect("table counts (read without a scan) are the tables' row counts after a turn's writes", () =>
    run(Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const messages = yield* MessageStore
      const turns = yield* TurnStore
      const host = yield* HostStore
      yield* messages.ingestBatch([row("1"), row("2"), row("3", { conversationId: ConversationId.make("terminal:b"), place: "b" })])
      const a = yield* turns.acquire(conv, owner, 1)
      assert.strictEqual(a._tag, "Started")
      if (a._tag === "Started") yield* turns.complete(a.turn.id, epoch)
      yield* turns.acquire(ConversationId.make("terminal:b"), owner, 2)
      yield* host.appendEvent("test", {})
      const counts = yield* host.tableCounts
      for (const [table, n] of Object.entries(counts)) {
        const [exact] = yield* sql<{ n: number }>`SELECT COUNT(*) AS n FROM ${sql(table)}`
        assert.strictEqual(n, exact!.n, table)
      }
      assert.deepStrictEqual([counts.messages, counts.conversations, counts.turns, counts.delivery_claims, counts.events], [3, 2, 2, 1, 1])
    })))
})
