import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Layer, Logger, LogLevel, TestClock } from "effect"
import { randomUUID } from "node:crypto"
import * as path from "node:path"
import { makeTestHost } from "../../layers/test.js"
import { decodeConfig } from "../../src/config/HostConfig.js"
import { TaskStore } from "../../src/db/TaskStore.js"
import { ExecutorId } from "../../src/domain/ids.js"
import { AgentExecutor, ExecutorLiveness, TurnFailed } from "../../src/pipeline/AgentExecutor.js"
import type { Channel } from "../../src/contracts/channel.js"
import { Channels } from "../../src/pipeline/Channels.js"
import { Ingest } from "../../src/pipeline/Ingest.js"
import { taskSummaries } from "../../src/schedules/summary.js"
import { tempDir } from "../support/db.js"

const quiet = Logger.minimumLogLevel(LogLevel.None)
const T0 = new Date("2026-01-01T00:00:00Z").getTime()
const iso = (ms: number) => new Date(ms).toISOString().slice(11, 19)

/** An agent that answers `NO_REPLY` to prompts containing "nothing", else `did: <text>`. */
const agent = Layer.merge(
  Layer.succeed(AgentExecutor, AgentExecutor.of({
    allocate: () => Effect.sync(() => ExecutorId.make(`inproc:${randomUUID()}`)),
    execute: (input) => Effect.forEach(input.messages, (m) => input.reply(m.text.includes("nothing") ? "NO_REPLY" : `did: ${m.text}`), { discard: true }),
    adopt: () => new TurnFailed({ code: "not_adoptable", reason: "in-process", retryable: true })
  })),
  Layer.succeed(ExecutorLiveness, ExecutorLiveness.of({ isAlive: () => Effect.succeed(false) }))
)

const configWith = (dir: string, workspace: Record<string, unknown>) =>
  Either.getOrThrow(decodeConfig({
    dataDir: dir,
    workspaces: [{ id: "main", ...workspace }],
    routes: [{ connection: "test", place: "*", workspace: "main" }],
    connections: { test: { kind: "recording", file: "sent.jsonl" } }
  }, "test"))

/** A host on the TestClock with an in-memory channel for `test`; `sent` collects what it was handed. */
const host = (dir: string, workspace: Record<string, unknown>, sent: Array<string>) =>
  Effect.gen(function* () {
    const ctx = yield* Layer.build(makeTestHost(configWith(dir, workspace), { executor: agent, databaseFile: path.join(dir, "pynchy.db") }).pipe(Layer.provide(quiet)))
    const channel: Channel = { name: "test", idempotentResends: true, send: async (d) => void sent.push(`${d.conversationId} ${d.text}`) }
    yield* Effect.flatMap(Channels, (c) => c.bind(channel)).pipe(Effect.asVoid, Effect.provide(ctx))
    return ctx
  })

/** Lets the fibers under test run until `check` holds (no clock involved; the TestClock stands still). */
const spin = (check: () => boolean, what: string) =>
  Effect.gen(function* () {
    for (let i = 0; i < 20_000; i++) {
      if (check()) return
      yield* Effect.yieldNow()
    }
    assert.fail(`never happened: ${what}`)
  })

const runsOf = (id: string) => Effect.flatMap(TaskStore, (s) => s.runs(id, 100))

describe("workspace schedules (TestClock)", () => {
  it.scoped("every 2 s (6 fields): one turn per due time through the pipeline, nothing between them", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const sent: Array<string> = []
      const ctx = yield* host(tempDir(), { schedule: "*/2 * * * * *", scheduledPrompt: "check the news", deliverTo: "test:sched" }, sent)
      const [task] = yield* Effect.flatMap(TaskStore, (s) => s.list()).pipe(Effect.provide(ctx))
      assert.strictEqual(task!.id, "ws:main")
      assert.strictEqual(task!.nextDue, T0 + 2_000)
      yield* TestClock.adjust("1 second")
      yield* Effect.repeatN(Effect.yieldNow(), 500)
      assert.deepStrictEqual(sent, [])
      yield* TestClock.adjust("1 second")
      yield* spin(() => sent.length === 1, "first run delivered")
      assert.deepStrictEqual(sent, ["test:sched did: check the news"])
      yield* TestClock.adjust("2 seconds")
      yield* spin(() => sent.length === 2, "second run delivered")
      const store = yield* Effect.provide(TaskStore, ctx)
      let runs = yield* store.runs("ws:main", 10)
      while (runs.some((r) => r.outcome === "queued")) runs = yield* Effect.zipRight(Effect.yieldNow(), store.runs("ws:main", 10))
      assert.deepStrictEqual(runs.map((r) => [iso(r.dueAt), r.outcome]), [["00:00:04", "delivered"], ["00:00:02", "delivered"]])
      const after = yield* Effect.flatMap(TaskStore, (s) => s.get("ws:main")).pipe(Effect.provide(ctx))
      assert.strictEqual(after._tag === "Some" ? after.value.nextDue : 0, T0 + 6_000)
    }))

  it.scoped("a turn that answers exactly NO_REPLY delivers nothing and is recorded quiet", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const sent: Array<string> = []
      const ctx = yield* host(tempDir(), { schedule: "*/2 * * * * *", scheduledPrompt: "report if anything is new, else nothing", deliverTo: "test:sched" }, sent)
      yield* TestClock.adjust("2 seconds")
      const store = yield* Effect.provide(TaskStore, ctx)
      let outcome = ""
      yield* spin(() => outcome === "quiet", "run recorded quiet")
        .pipe(Effect.race(Effect.forever(Effect.tap(store.lastRun("ws:main"), (r) => Effect.sync(() => { outcome = r._tag === "Some" ? r.value.outcome : "" })))))
      assert.deepStrictEqual(sent, [])
      // A user's own NO_REPLY-worthy message is answered as usual: only scheduled turns may stay silent.
      yield* Effect.flatMap(Ingest, (i) => i.ingest({ connection: "test", place: "sched", providerEventId: "u1", sender: "u", text: "nothing new?" })).pipe(Effect.provide(ctx))
      yield* spin(() => sent.length === 1, "user message answered")
      assert.deepStrictEqual(sent, ["test:sched NO_REPLY"])
    }))

  it.scoped("downtime: a young missed run runs once at start; older ones are skipped, recorded, and told only with notifySkipped", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const sent: Array<string> = []
      const hourly = { schedule: "0 * * * *", scheduledPrompt: "hourly check", deliverTo: "test:h", catchUpWindow: "30m", notifySkipped: true }
      yield* TestClock.setTime(T0 + 30_000)
      yield* Effect.scoped(host(dir, hourly, sent))
      // Down across 01:00; back at 01:20: 01:00 is 20 minutes old and runs, once.
      yield* TestClock.setTime(T0 + 80 * 60_000)
      yield* Effect.scoped(Effect.gen(function* () {
        const store = yield* Effect.provide(TaskStore, yield* host(dir, hourly, sent))
        yield* spin(() => sent.length === 1, "the 01:00 run caught up")
        // Its turn settles the run before this host stops.
        while ((yield* store.lastRun("ws:main")).pipe((r) => r._tag === "Some" && r.value.outcome === "queued")) yield* Effect.yieldNow()
      }))
      assert.deepStrictEqual(sent, ["test:h did: hourly check"])
      // Down from 01:20 to 04:45: 02:00, 03:00 and 04:00 were missed; the latest is 45 minutes old.
      yield* TestClock.setTime(T0 + (4 * 60 + 45) * 60_000)
      const ctx = yield* host(dir, hourly, sent)
      yield* spin(() => sent.length === 2, "the skip notice")
      assert.match(sent[1]!, /Skipped scheduled runs from 2026-01-01T02:00:00.000Z to 2026-01-01T04:00:00.000Z/)
      const runs = yield* runsOf("ws:main").pipe(Effect.provide(ctx))
      assert.deepStrictEqual(runs.map((r) => [iso(r.dueAt), r.outcome, r.skippedThrough === null ? null : iso(r.skippedThrough)]), [
        ["02:00:00", "skipped", "04:00:00"],
        ["01:00:00", "delivered", null]
      ])
      const task = yield* Effect.flatMap(TaskStore, (s) => s.get("ws:main")).pipe(Effect.provide(ctx))
      assert.strictEqual(task._tag === "Some" ? iso(task.value.nextDue!) : "", "05:00:00")
    }))

  it.scoped("a schedule whose conversation is idle for pauseAfterIdleDays pauses and says so once; the user's next message resumes it", () =>
    Effect.gen(function* () {
      // The host is restarted across each jump of the clock (a running host publishes its status every second).
      const dir = tempDir()
      const sent: Array<string> = []
      const sixHourly = { schedule: "0 */6 * * *", scheduledPrompt: "anything?", deliverTo: "test:p", pauseAfterIdleDays: 1, catchUpWindow: "1d" }
      const at = (ms: number, wait: () => boolean, what: string) =>
        Effect.scoped(Effect.gen(function* () {
          yield* TestClock.setTime(ms)
          yield* host(dir, sixHourly, sent)
          yield* spin(wait, what)
        }))
      yield* at(T0, () => true, "created")
      // Six hours without a user message: runs.
      yield* at(T0 + 6 * 3_600_000 + 1_000, () => sent.length === 1, "a run before the pause")
      // Thirty hours: pauses, and says so.
      yield* at(T0 + 30 * 3_600_000, () => sent.length === 2, "the pause notice")
      assert.match(sent[1]!, /Paused the scheduled 'ws:main' runs: no message from you in 1 days/)
      // A day later: still paused, nothing more said.
      yield* at(T0 + 54 * 3_600_000, () => true, "")
      yield* Effect.scoped(Effect.gen(function* () {
        const ctx = yield* host(dir, sixHourly, sent)
        yield* Effect.repeatN(Effect.yieldNow(), 2_000)
        const store = yield* Effect.provide(TaskStore, ctx)
        const pausedAt = Effect.map(store.get("ws:main"), (t) => (t._tag === "Some" ? t.value.pausedAt : -1))
        assert.strictEqual(yield* pausedAt, T0 + 30 * 3_600_000)
        assert.strictEqual(sent.length, 2)
        // The user writes in the conversation: answered, and the schedule resumes at once.
        yield* Effect.flatMap(Ingest, (i) => i.ingest({ connection: "test", place: "p", providerEventId: "back", sender: "u", text: "I'm back" })).pipe(Effect.provide(ctx))
        yield* spin(() => sent.length === 3, "the user's message answered")
        let resumed = false
        yield* spin(() => resumed, "the schedule resumed").pipe(Effect.race(Effect.forever(Effect.tap(pausedAt, (p) => Effect.sync(() => { resumed = p === null })))))
        const tasks = yield* taskSummaries.pipe(Effect.provide(ctx))
        assert.strictEqual(tasks[0]!.status, "active")
      }))
      assert.strictEqual(sent[2], "test:p did: I'm back")
      // Its next due time (60:00) runs again.
      yield* at(T0 + 60 * 3_600_000 + 1_000, () => sent.length === 4, "the first run after the resume")
      assert.strictEqual(sent[3], "test:p did: anything?")
    }))
})
