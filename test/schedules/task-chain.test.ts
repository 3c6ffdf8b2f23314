/**
 * A task that re-arms itself: an agent whose every turn asks `tasks.schedule` for a one-off task
 * 2 s out (and, refused, 300 s out), on the test host with TestClock. A user's turn gets its task
 * as asked. A turn started by a task cannot create tasks unless the workspace says
 * `tasks: { chain: true }`, and then a one-off task it creates is at least
 * `limits.minTaskIntervalSeconds` away: the chain runs no faster than the floor.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect, Either, Layer, Logger, LogLevel, TestClock } from "effect"
import { randomUUID } from "node:crypto"
import { makeTestHost } from "../../layers/test.js"
import { HostActions } from "../../src/actions/HostActions.js"
import { decodeConfig } from "../../src/config/HostConfig.js"
import { TaskStore } from "../../src/db/TaskStore.js"
import { ExecutorId } from "../../src/domain/ids.js"
import { AgentExecutor, ExecutorLiveness } from "../../src/pipeline/AgentExecutor.js"
import type { Channel } from "../../src/contracts/channel.js"
import { Channels } from "../../src/pipeline/Channels.js"
import { Ingest } from "../../src/pipeline/Ingest.js"
import { tempDir } from "../support/db.js"

const T0 = new Date("2026-01-01T00:00:00Z").getTime()
const FLOOR_S = 300

interface Attempt {
  readonly at: number
  readonly senders: ReadonlyArray<string>
  readonly delayS: number
  readonly result: Record<string, unknown>
}

/** The agent: every turn schedules a one-off task 2 s out; refused, it tries the floor (300 s). */
const rearmingAgent = (holder: { actions?: HostActions.Service }, attempts: Array<Attempt>) =>
  Layer.merge(
    Layer.succeed(AgentExecutor, AgentExecutor.of({
      allocate: () => Effect.sync(() => ExecutorId.make(`inproc:${randomUUID()}`)),
      execute: (input) =>
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          for (const delayS of [2, FLOOR_S]) {
            const result = yield* holder.actions!.call(input.workspace, "tasks.schedule", { prompt: "check again", at: new Date(now + delayS * 1_000).toISOString() }, {
              turnId: input.turn.id,
              conversationId: input.conversation.id
            }).pipe(Effect.orElseSucceed(() => ({ error: "action refused" })))
            attempts.push({ at: now, senders: input.messages.map((m) => m.sender), delayS, result: result as Record<string, unknown> })
            if (!("refused" in (result as object))) break
          }
          yield* input.reply("done")
        }),
      adopt: () => Effect.die("not adoptable")
    })),
    Layer.succeed(ExecutorLiveness, ExecutorLiveness.of({ isAlive: () => Effect.succeed(false) }))
  )

const spin = (check: () => boolean, what: string) =>
  Effect.gen(function* () {
    for (let i = 0; i < 50_000; i++) {
      if (check()) return
      yield* Effect.yieldNow()
    }
    assert.fail(`never happened: ${what}`)
  })

const host = (tasks: unknown) =>
  Effect.gen(function* () {
    yield* TestClock.setTime(T0)
    const config = Either.getOrThrow(decodeConfig({
      dataDir: tempDir(),
      workspaces: [{ id: "main", ...(tasks !== undefined ? { tasks } : {}) }],
      routes: [{ connection: "test", place: "*", workspace: "main" }],
      connections: { test: { kind: "recording", file: "sent.jsonl" } },
      limits: { minTaskIntervalSeconds: FLOOR_S }
    }, "test"))
    const holder: { actions?: HostActions.Service } = {}
    const attempts: Array<Attempt> = []
    const ctx = yield* Layer.build(makeTestHost(config, { executor: rearmingAgent(holder, attempts) }).pipe(Layer.provide(Logger.minimumLogLevel(LogLevel.None))))
    holder.actions = yield* Effect.provide(HostActions, ctx)
    const sent: Array<string> = []
    const channel: Channel = { name: "test", idempotentResends: true, send: async (d) => void sent.push(d.text) }
    yield* Effect.flatMap(Channels, (c) => c.bind(channel)).pipe(Effect.asVoid, Effect.provide(ctx))
    const ingest = yield* Effect.provide(Ingest, ctx)
    // The user's own turn: "remind me in 2 seconds" is scheduled as asked.
    yield* ingest.ingest({ connection: "test", place: "room", providerEventId: "u1", sender: "user", text: "remind me in 2 seconds" })
    yield* spin(() => sent.length === 1, "the user's turn")
    assert.deepStrictEqual(attempts.map((a) => [a.senders, a.delayS, "id" in a.result]), [[["user"], 2, true]])
    const store = yield* Effect.provide(TaskStore, ctx)
    return { attempts, sent, store }
  })

describe("a task's turn creating tasks (tasks.chain)", () => {
  it.scoped("by default a task's turn cannot create a task: refused with the reason, and the chain stops after one run", () =>
    Effect.gen(function* () {
      const { attempts, sent, store } = yield* host(undefined)
      yield* TestClock.adjust("2 seconds")
      yield* spin(() => sent.length === 2, "the task's turn")
      const byTask = attempts.slice(1)
      assert.deepStrictEqual(byTask.map((a) => [a.at - T0, a.senders, a.delayS]), [[2_000, ["schedule"], 2], [2_000, ["schedule"], FLOOR_S]])
      for (const a of byTask) assert.match(String(a.result["refused"]), /started by a task.*tasks\.chain/)
      // No task is left to run: the one the user asked for is done, and nothing re-armed it.
      assert.deepStrictEqual((yield* store.list()).map((t) => [t.kind, t.status, t.at === null ? null : t.at - T0]), [["task", "done", 2_000]])
      for (let i = 0; i < 6; i++) yield* TestClock.adjust("5 minutes")
      assert.strictEqual(sent.length, 2)
      assert.strictEqual(attempts.length, 3)
    }))

  it.scoped("with tasks: { chain: true } it may, no sooner than limits.minTaskIntervalSeconds from now", () =>
    Effect.gen(function* () {
      const { attempts, sent } = yield* host({ chain: true })
      yield* TestClock.adjust("2 seconds")
      yield* spin(() => sent.length === 2, "the first task's turn")
      const [tooSoon, atFloor] = attempts.slice(1)
      assert.deepStrictEqual([tooSoon!.delayS, atFloor!.delayS], [2, FLOOR_S])
      assert.match(String(tooSoon!.result["refused"]), /at least 300s from now.*limits\.minTaskIntervalSeconds/)
      assert.isTrue("id" in atFloor!.result)
      // The chain goes on at the floor's pace, never faster.
      for (let n = 3; n <= 4; n++) {
        yield* TestClock.adjust(`${FLOOR_S} seconds`)
        yield* spin(() => sent.length === n, `chained run ${n - 1}`)
      }
      const runs = attempts.filter((a) => a.senders.includes("schedule") && "id" in a.result).map((a) => a.at - T0)
      assert.deepStrictEqual(runs, [2_000, 302_000, 602_000])
    }))
})
