/**
 * The event bus through the real stack (test host on a SQLite file, scripted executor): the
 * events real paths publish, a plugin observer that gets them in order, one that blocks forever
 * and cannot hold up ingest (it drops, and the drops are counted), and the event log's retention.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Layer, Option } from "effect"
import * as path from "node:path"
import { makeTestHost } from "../../layers/test.js"
import { decodeConfig } from "../../src/config/HostConfig.js"
import type { PynchyConfig } from "../../src/config/schema.js"
import { HostStore } from "../../src/db/HostStore.js"
import { ConversationId } from "../../src/domain/ids.js"
import type { HostEvent, HostEventType } from "../../src/events/HostEvent.js"
import { Observers } from "../../src/observers/Observers.js"
import { Ingest } from "../../src/pipeline/Ingest.js"
import type { BuiltinPlugin } from "../../src/builtins/list.js"
import { tempDir } from "../support/db.js"
import { eventually } from "../support/eventually.js"

const configIn = (dir: string, extra: Record<string, unknown> = {}): PynchyConfig =>
  Either.getOrThrow(decodeConfig({
    dataDir: dir,
    workspaces: [{ id: "main", instructions: "test" }],
    routes: [{ connection: "test", place: "*", workspace: "main" }, { connection: "two", place: "off", workspace: "main", enabled: false }],
    connections: { test: { kind: "recording", file: "sent.jsonl", idempotent: true }, two: { kind: "recording", file: "two.jsonl", idempotent: true } },
    limits: { maxTurnAttempts: 2, retryBaseMs: 1, readinessCheckMs: 50 },
    ...extra
  }, "test config"))

/** A plugin whose observer records what it is given. */
const recorder = (seen: Array<HostEvent>, onEvent?: (e: HostEvent) => unknown): BuiltinPlugin => ({
  name: "recorder",
  load: async () => ({ name: "recorder", observer: () => ({ name: "log", onEvent: onEvent ?? ((e: HostEvent) => void seen.push(e)) }) })
})

const msg = (place: string, id: string, text: string) => ({ connection: "test", place, providerEventId: id, sender: "u", text })

const storedTypes = Effect.flatMap(HostStore, (s) => s.recentEvents(10_000)).pipe(Effect.map((rows) => new Set(rows.map((r) => r.type))))

describe("event bus", () => {
  it.scopedLive("real paths publish their events; the event log and a plugin observer get them, in order", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const seen: Array<HostEvent> = []
      let ready = true
      const runtime = { name: "test", start: async () => {}, close: async () => {}, isReady: () => ready }
      const ctx = yield* Layer.build(makeTestHost(configIn(dir), {
        databaseFile: path.join(dir, "pynchy.db"),
        plugins: [recorder(seen)],
        runtimes: [{ plugin: "test-runtime", value: runtime }]
      }))
      const { ingest } = yield* Effect.provide(Ingest, ctx)
      // answered; the same platform event again; a failing turn retried then failed; refused places
      yield* ingest(msg("room", "e1", "hello"))
      yield* ingest(msg("room", "e1", "hello"))
      yield* ingest(msg("bad", "e2", "!fail please"))
      assert.strictEqual((yield* Effect.either(ingest({ ...msg("x", "e3", "hi"), connection: "nowhere" })))._tag, "Left")
      assert.strictEqual((yield* Effect.either(ingest({ ...msg("off", "e4", "hi"), connection: "two" })))._tag, "Left")
      ready = false
      const expected: ReadonlyArray<HostEventType> = [
        "message.ingested", "message.deduplicated", "message.no_route", "turn.queued", "turn.started", "turn.completed",
        "turn.retried", "turn.failed", "delivery.recorded", "delivery.sent", "runtime.ready", "runtime.unready"
      ]
      const stored = yield* eventually(
        Effect.map(storedTypes, (types) => (expected.every((t) => types.has(t)) ? types : undefined)),
        { label: `the event log holds ${expected.join(", ")}` }
      ).pipe(Effect.provide(ctx))
      assert.includeMembers([...stored], [...expected])
      const rows = yield* Effect.flatMap(HostStore, (s) => s.recentEvents(10_000)).pipe(Effect.provide(ctx))
      assert.notInclude(JSON.stringify(rows), "hello", "no message content in an event")
      const noRoutes = rows.filter((r) => r.type === "message.no_route").map((r) => r.payload as { connection: string; disabled: boolean })
      assert.sameDeepMembers(noRoutes.map((r) => [r.connection, r.disabled]), [["nowhere", false], ["two", true]])

      // The plugin observer saw the same stream, in order: per turn, started before completed or failed.
      yield* eventually(Effect.sync(() => (seen.some((e) => e.type === "turn.failed") && seen.some((e) => e.type === "delivery.sent") ? true : undefined)), { label: "the plugin observer's events" })
      for (let i = 1; i < seen.length; i++) assert.isAtLeast(seen[i]!.at, seen[i - 1]!.at - 0, "events arrive in publishing order (their times never go back)")
      const room = seen.filter((e) => "conversationId" in e && e.conversationId === "test:room").map((e) => e.type)
      // A reply is sent while its turn finishes: `turn.completed` follows the record, in either order with the send.
      const order = ["message.ingested", "message.deduplicated", "turn.started", "delivery.recorded", "delivery.sent"]
      assert.deepStrictEqual(room.filter((t) => order.includes(t)), order)
      assert.isAbove(room.indexOf("turn.completed"), room.indexOf("delivery.recorded"))
      const bad = seen.filter((e) => "conversationId" in e && e.conversationId === "test:bad").map((e) => e.type).filter((t) => t.startsWith("turn.") && t !== "turn.queued")
      assert.deepStrictEqual(bad, ["turn.started", "turn.retried", "turn.started", "turn.failed"])
      const stats = yield* Effect.flatMap(Observers, (o) => o.stats).pipe(Effect.provide(ctx))
      assert.deepStrictEqual(stats.map((s) => [s.name, s.dropped, s.failed]).sort(), [["event-log", 0, 0], ["recorder/log", 0, 0]])
    }))

  it.scopedLive("an observer that never returns cannot hold up ingest: its queue fills and the drops are counted", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      let calls = 0
      const stuck = recorder([], () => {
        calls++
        return new Promise(() => {})
      })
      const ctx = yield* Layer.build(makeTestHost(configIn(dir, { observers: { queueSize: 4 } }), { databaseFile: path.join(dir, "pynchy.db"), plugins: [stuck] }))
      const { ingest } = yield* Effect.provide(Ingest, ctx)
      // Every ingest completes although the observer has not come back from its first event.
      for (let i = 0; i < 40; i++) yield* ingest(msg(`p${i}`, `e${i}`, `m${i}`))
      const stats = yield* eventually(
        Effect.map(Effect.flatMap(Observers, (o) => o.stats), (all) => {
          const s = all.find((x) => x.name === "recorder/log")
          return s !== undefined && s.dropped > 0 ? s : undefined
        }),
        { label: "dropped events counted for the stuck observer" }
      ).pipe(Effect.provide(ctx))
      assert.strictEqual(calls, 1, "the stuck observer is still in its first call")
      assert.strictEqual(stats.handled, 0)
      assert.isAtMost(stats.queued, 4)
      // The event log, a separate observer, kept everything.
      const ingested = yield* eventually(
        Effect.map(Effect.flatMap(HostStore, (s) => s.recentEvents(10_000)), (rows) => {
          const n = rows.filter((r) => r.type === "message.ingested").length
          return n === 40 ? n : undefined
        }),
        { label: "40 message.ingested rows" }
      ).pipe(Effect.provide(ctx))
      assert.strictEqual(ingested, 40)
      const drops = (yield* Effect.flatMap(Observers, (o) => o.stats).pipe(Effect.provide(ctx))).find((x) => x.name === "event-log")!
      assert.strictEqual(drops.dropped, 0)
    }))

  it.scopedLive("an observer that throws loses only the events it threw on; the next ones reach it", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const seen: Array<HostEvent> = []
      const flaky = recorder(seen, (e) => {
        if (e.type === "message.ingested" && e.providerEventId === "e0") throw new Error("observer bug")
        seen.push(e)
      })
      const ctx = yield* Layer.build(makeTestHost(configIn(dir), { databaseFile: path.join(dir, "pynchy.db"), plugins: [flaky] }))
      const { ingest } = yield* Effect.provide(Ingest, ctx)
      yield* ingest(msg("a", "e0", "one"))
      yield* ingest(msg("b", "e1", "two"))
      yield* eventually(Effect.sync(() => (seen.some((e) => e.type === "message.ingested" && e.providerEventId === "e1") ? true : undefined)), { label: "the second message's event" })
      const s = (yield* Effect.flatMap(Observers, (o) => o.stats).pipe(Effect.provide(ctx))).find((x) => x.name === "recorder/log")!
      assert.strictEqual(s.failed, 1)
      assert.isFalse(seen.some((e) => e.type === "message.ingested" && e.providerEventId === "e0"))
      assert.isTrue(Option.isNone(Option.fromNullable(seen.find((e) => "conversationId" in e && e.conversationId === ConversationId.make("test:zzz")))))
    }))
})
