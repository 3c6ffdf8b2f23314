/**
 * `pynchy trace` verdicts, each silent case made to happen for real through the test host on a
 * SQLite file (scripted executor), then read back the way the command reads it; and once through
 * the built CLI on the stopped host's database. The delivery verdicts use channels bound by the
 * test: one that refuses, one that hangs when the host stops mid-send, and one whose runtime is down.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Either, Exit, Layer, Scope } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { makeTestHost } from "../../layers/test.js"
import { decodeConfig } from "../../src/config/HostConfig.js"
import type { PynchyConfig } from "../../src/config/schema.js"
import * as Database from "../../src/db/Database.js"
import { trace } from "../../src/events/trace.js"
import { HostConfig } from "../../src/config/HostConfig.js"
import { HostStore } from "../../src/db/HostStore.js"
import { Channels } from "../../src/pipeline/Channels.js"
import type { Channel } from "../../src/contracts/channel.js"
import { Ingest } from "../../src/pipeline/Ingest.js"
import { BIN, runCli } from "../support/cli.js"
import { tempDir } from "../support/db.js"
import { eventually } from "../support/eventually.js"

const configIn = (dir: string): PynchyConfig =>
  Either.getOrThrow(decodeConfig({
    dataDir: dir,
    workspaces: [{ id: "main", instructions: "test" }],
    routes: [
      { connection: "test", place: "*", workspace: "main" }, { connection: "two", place: "off", workspace: "main", enabled: false },
      // Channels the delivery test binds itself (no `connections:` entry).
      { connection: "nope", place: "*", workspace: "main" }, { connection: "hang", place: "*", workspace: "main" }, { connection: "down", place: "*", workspace: "main" }
    ],
    connections: { test: { kind: "recording", file: "sent.jsonl", idempotent: true }, two: { kind: "recording", file: "two.jsonl", idempotent: true } },
    limits: { maxTurnAttempts: 1, readinessCheckMs: 50 }
  }, "test config"))

const msg = (place: string, id: string, text: string, connection = "test") => ({ connection, place, providerEventId: id, sender: "u", text })

/** The trace as the command computes it, on the same database file. */
const traced = (dir: string, query: string | undefined) =>
  trace(query, true).pipe(Effect.provide(Layer.provideMerge(Database.layerFile(path.join(dir, "pynchy.db")), HostConfig.layerFrom(configIn(dir)))))

/** Waits for the verdict, and for `event` in the trace too (the event log writes a few milliseconds late). */
const verdictOnceLogged = (dir: string, query: string, code: string, event?: string) =>
  eventually(Effect.map(Effect.either(traced(dir, query)), (t) =>
    Either.isRight(t) && t.right.verdict.code === code && (event === undefined || t.right.events.some((e) => e.type === event)) ? t.right : undefined
  ), { label: `verdict ${code}${event === undefined ? "" : ` with ${event}`} for ${query}` })

describe("pynchy trace", () => {
  it.scopedLive("no route, route disabled, turn failed (code and what to do), answered, queued behind a running turn", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      // Each reply takes long enough (real time) for a second message to wait behind its turn.
      const ctx = yield* Layer.build(makeTestHost(configIn(dir), { databaseFile: path.join(dir, "pynchy.db"), replyDelay: Duration.seconds(3) }))
      const { ingest } = yield* Effect.provide(Ingest, ctx)

      yield* Effect.either(ingest(msg("lost", "p-1", "hello", "nowhere")))
      const noRoute = yield* verdictOnceLogged(dir, "p-1", "no_route")
      assert.include(noRoute.verdict.text, "no route covers connection 'nowhere' place 'lost'")
      // By conversation too.
      assert.strictEqual((yield* traced(dir, "nowhere:lost")).verdict.code, "no_route")

      yield* Effect.either(ingest(msg("off", "p-2", "hello", "two")))
      const disabled = yield* verdictOnceLogged(dir, "p-2", "route_disabled")
      assert.include(disabled.verdict.text, "enabled: false")

      const failed = yield* ingest(msg("f", "p-3", "!fatal now"))
      const fail = yield* verdictOnceLogged(dir, String(failed.messageId), "turn_failed", "turn.failed")
      assert.include(fail.verdict.text, "scripted_fatal")
      assert.include(fail.verdict.text, "send the message again")
      assert.deepStrictEqual(fail.events.map((e) => e.type).filter((t) => t.startsWith("turn.") && t !== "turn.queued"), ["turn.started", "turn.failed"])

      const first = yield* ingest(msg("busy", "p-4", "first"))
      yield* eventually(Effect.map(traced(dir, String(first.messageId)), (t) => (t.verdict.code === "turn_running" ? true : undefined)), { label: "the first turn running" })
      const second = yield* ingest(msg("busy", "p-5", "second"))
      const queued = yield* traced(dir, String(second.messageId))
      assert.strictEqual(queued.verdict.code, "queued_behind_turn")
      assert.include(queued.verdict.text, `behind turn ${queued.ahead!.id}`)
      const answered = yield* verdictOnceLogged(dir, "p-4", "answered", "delivery.sent")
      assert.isTrue(answered.events.some((e) => e.type === "delivery.sent"))
      assert.isTrue(answered.events.some((e) => e.type === "message.ingested"))
      yield* verdictOnceLogged(dir, "test:busy", "answered")

      // Nothing of the messages' text is in a trace.
      assert.notInclude(JSON.stringify(answered), "first")
    }), { timeout: 120_000 })

  it.scopedLive.skipIf(!fs.existsSync(BIN) || !fs.existsSync(path.resolve(import.meta.dirname, "../../dist")))("through the CLI on a stopped host: the verdict names the missing route; --json; an unknown target", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      fs.writeFileSync(path.join(dir, "pynchy.yaml"), `dataDir: ${dir}\nroutes:\n  - { connection: test, place: "*", workspace: main }\nconnections:\n  test: { kind: recording, file: sent.jsonl }\n`)
      const ctx = yield* Layer.build(makeTestHost(configIn(dir), { databaseFile: path.join(dir, "pynchy.db") }))
      const { ingest } = yield* Effect.provide(Ingest, ctx)
      yield* Effect.either(ingest(msg("lost", "p-9", "hello", "nowhere")))
      yield* verdictOnceLogged(dir, "p-9", "no_route")
      const text = yield* Effect.promise(() => runCli(["trace", "p-9"], { cwd: dir }))
      assert.strictEqual(text.code, 0, text.stderr)
      assert.include(text.stdout, "verdict: no route: no route covers connection 'nowhere' place 'lost'")
      const json = yield* Effect.promise(() => runCli(["trace", "nowhere:lost", "--json"], { cwd: dir }))
      assert.strictEqual(JSON.parse(json.stdout).verdict.code, "no_route")
      const unknown = yield* Effect.promise(() => runCli(["trace", "no-such-thing"], { cwd: dir }))
      assert.notStrictEqual(unknown.code, 0)
      assert.include(unknown.stdout + unknown.stderr, "nothing known as 'no-such-thing'")
    }), { timeout: 120_000 })

  it.scopedLive("delivery failed (the channel refuses), delivery unknown (the host stopped mid-send on a channel that cannot resend), channel not ready", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const file = path.join(dir, "pynchy.db")
      // Ready at each start (startup waits for it), then down.
      let downReady = true
      const down = { name: "down", start: async () => {}, close: async () => {}, isReady: () => downReady }
      const build = (scope: Scope.Scope) =>
        Layer.buildWithScope(makeTestHost(configIn(dir), { databaseFile: file, runtimes: [{ plugin: "down-runtime", value: down }] }), scope)
      const first = yield* Scope.make()
      const ctx = yield* build(first)
      const { ingest } = yield* Effect.provide(Ingest, ctx)
      const channels = yield* Effect.provide(Channels, ctx)
      const refusing: Channel = { name: "nope", idempotentResends: false, send: async () => { throw new Error("platform says no") } }
      let sending = false
      const hanging: Channel = { name: "hang", idempotentResends: false, send: () => { sending = true; return new Promise<void>(() => {}) } }
      yield* Effect.asVoid(channels.bind(refusing))
      yield* Effect.asVoid(channels.bind(hanging))

      const refused = yield* ingest(msg("room", "d-1", "hello", "nope"))
      const failed = yield* verdictOnceLogged(dir, String(refused.messageId), "delivery_failed", "delivery.failed")
      assert.include(failed.verdict.text, "platform says no")

      // No channel serves `down` and its runtime says it is not ready: the reply waits.
      downReady = false
      const waiting = yield* ingest(msg("room", "d-2", "hello", "down"))
      const notReady = yield* verdictOnceLogged(dir, String(waiting.messageId), "channel_not_ready")
      assert.include(notReady.verdict.text, "the 'down' runtime reported not ready")

      // The host stops while a send that cannot be repeated safely is in flight; the next host
      // cannot know whether it arrived: unknown, and the conversation is told.
      const inFlight = yield* ingest(msg("room", "d-3", "hello", "hang"))
      yield* eventually(Effect.sync(() => (sending ? true : undefined)), { label: "the send in flight" })
      yield* Scope.close(first, Exit.void)
      const notices: Array<string> = []
      downReady = true
      const second = yield* build(yield* Effect.scope)
      yield* Effect.flatMap(Channels, (c) => Effect.asVoid(c.bind({ name: "hang", idempotentResends: false, send: async (d) => void notices.push(d.text) }))).pipe(Effect.provide(second))
      const unknown = yield* verdictOnceLogged(dir, String(inFlight.messageId), "delivery_unknown", "delivery.unknown")
      assert.include(unknown.verdict.text, "may or may not have arrived")
      yield* eventually(Effect.sync(() => (notices.length > 0 ? true : undefined)), { label: "the notice of the unknown delivery" })
      const types = yield* Effect.flatMap(HostStore, (s) => s.recentEvents(1_000)).pipe(Effect.provide(second), Effect.map((rows) => rows.map((r) => r.type)))
      assert.includeMembers(types, ["delivery.failed", "delivery.unknown", "runtime.unready"])
    }), { timeout: 120_000 })
})
