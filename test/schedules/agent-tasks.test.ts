import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Layer, Logger, LogLevel, TestClock } from "effect"
import { makeTestHost } from "../../layers/test.js"
import { HostActions } from "../../src/actions/HostActions.js"
import { decodeConfig } from "../../src/config/HostConfig.js"
import { TaskStore } from "../../src/db/TaskStore.js"
import type { Channel } from "../../src/contracts/channel.js"
import { Channels } from "../../src/pipeline/Channels.js"
import { Ingest } from "../../src/pipeline/Ingest.js"
import { Workspaces } from "../../src/pipeline/Workspaces.js"
import { WorkspaceId } from "../../src/domain/ids.js"
import { tempDir } from "../support/db.js"

const T0 = new Date("2026-01-01T00:00:00Z").getTime()

const config = (dir: string) =>
  Either.getOrThrow(decodeConfig({
    dataDir: dir,
    workspaces: [{ id: "main" }, { id: "other" }, { id: "locked", tasks: false }],
    routes: [
      { connection: "test", place: "*", workspace: "main" },
      { connection: "test", place: "elsewhere", workspace: "other" },
      { connection: "test", place: "locked", workspace: "locked" }
    ],
    connections: { test: { kind: "recording", file: "sent.jsonl" } },
    limits: { minTaskIntervalSeconds: 300, maxTasksPerWorkspace: 2 }
  }, "test"))

const spin = (check: () => boolean, what: string) =>
  Effect.gen(function* () {
    for (let i = 0; i < 50_000; i++) {
      if (check()) return
      yield* Effect.yieldNow()
    }
    assert.fail(`never happened: ${what}`)
  })

describe("tasks an agent creates (the tasks.* host actions)", () => {
  it.scoped("schedule, list and cancel through tool calls; floor, cap and other workspaces refused with reasons; a created task runs when due", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      const ctx = yield* Layer.build(makeTestHost(config(tempDir())).pipe(Layer.provide(Logger.minimumLogLevel(LogLevel.None))))
      const sent: Array<string> = []
      const channel: Channel = { name: "test", idempotentResends: true, send: async (d) => void sent.push(`${d.conversationId} ${d.text}`) }
      yield* Effect.flatMap(Channels, (c) => c.bind(channel)).pipe(Effect.asVoid, Effect.provide(ctx))
      const ingest = yield* Effect.provide(Ingest, ctx)
      for (const place of ["room", "elsewhere", "locked"]) yield* ingest.ingest({ connection: "test", place, providerEventId: place, sender: "u", text: "hi" })
      yield* spin(() => sent.length === 3, "first answers")
      const actions = yield* Effect.provide(HostActions, ctx)
      const workspaces = yield* Effect.provide(Workspaces, ctx)
      const ws = (id: string) => Effect.map(workspaces.get(WorkspaceId.make(id)), (w) => (w._tag === "Some" ? w.value : assert.fail(id)))
      const main = yield* ws("main")
      const locked = yield* ws("locked")
      const call = (tool: string, input: unknown, conversationId = "test:room", w = main) =>
        actions.call(w, tool, input, { turnId: 1, conversationId }) as Effect.Effect<Record<string, any>, unknown>

      // Offered to every workspace unless it says tasks: false.
      assert.includeMembers(actions.toolsFor(main).map((t) => t.action), ["tasks.schedule", "tasks.list", "tasks.cancel"])
      assert.deepStrictEqual(actions.toolsFor(locked).map((t) => t.action), [])
      const notEnabled = yield* Effect.flip(call("tasks.list", {}, "test:locked", locked))
      assert.strictEqual((notEnabled as { code: string }).code, "not_enabled")

      // The interval floor: refused with the reason, as a result the agent reads.
      assert.match((yield* call("tasks.schedule", { prompt: "spam", everySeconds: 60 })).refused, /runs every 60s; the shortest interval allowed is 300s/)
      assert.match((yield* call("tasks.schedule", { prompt: "spam", cron: "*/2 * * * * *" })).refused, /runs every 2s/)
      assert.match((yield* call("tasks.schedule", { prompt: "x", cron: "0 9 * * *", everySeconds: 600 })).refused, /exactly one of/)
      assert.match((yield* call("tasks.schedule", { prompt: "x", at: "2020-01-01T00:00:00Z" })).refused, /in the past/)
      assert.match((yield* call("tasks.schedule", { prompt: "x", at: "2026-02-01T00:00:00Z", conversation: "test:elsewhere" })).refused, /not one of this workspace's/)

      const water = yield* call("tasks.schedule", { prompt: "water the plants", everySeconds: 600 })
      assert.strictEqual(water.nextDue, "2026-01-01T00:10:00.000Z")
      const standup = yield* call("tasks.schedule", { prompt: "standup notes", cron: "0 9 * * MON-FRI", timezone: "Europe/Berlin" })
      assert.strictEqual(standup.nextDue, "2026-01-01T08:00:00.000Z")
      // The cap (2 here): refused with the reason.
      assert.match((yield* call("tasks.schedule", { prompt: "third", at: "2026-02-01T00:00:00Z" })).refused, /already has 2 active tasks/)

      const listed = yield* call("tasks.list", {})
      assert.sameMembers(listed.tasks.map((t: { id: string }) => t.id), [water.id, standup.id])
      // Another workspace neither sees nor cancels them.
      const other = yield* ws("other")
      assert.deepStrictEqual((yield* call("tasks.list", {}, "test:elsewhere", other)).tasks, [])
      assert.match((yield* call("tasks.cancel", { id: standup.id }, "test:elsewhere", other)).refused, /no task/)
      assert.deepStrictEqual(yield* call("tasks.cancel", { id: standup.id }), { cancelled: standup.id })
      assert.deepStrictEqual((yield* call("tasks.list", {})).tasks.map((t: { id: string }) => t.id), [water.id])

      // The created task woke the timer: it runs at its due time, in the conversation it was created from.
      yield* TestClock.adjust("10 minutes")
      yield* spin(() => sent.includes("test:room echo: water the plants"), "the task's turn")
      const runs = yield* Effect.flatMap(TaskStore, (s) => s.runs(water.id, 10)).pipe(Effect.provide(ctx))
      assert.deepStrictEqual(runs.map((r) => r.dueAt), [T0 + 600_000])
    }))
})
