/**
 * Scheduled work through the real stack: turns in bwrap sandboxes (the openai core), the host's
 * own LLM gateway in front of a scripted OpenAI-compatible upstream, the usage the upstream reports
 * recorded per turn.
 *
 * - An agent creates, lists and cancels a task through tool calls; the task row shows it.
 * - A schedule's tokens today are its turns' real gateway usage; at its `scheduleDailyTokens` cap
 *   the next run is skipped with the reason, and the spend counts against the workspace's gateway
 *   budget like any turn.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect, Either, Layer, Option } from "effect"
import { makeTestHost } from "../../layers/test.js"
import { decodeConfig } from "../../src/config/HostConfig.js"
import type { PynchyConfig } from "../../src/config/schema.js"
import { HostStore } from "../../src/db/HostStore.js"
import { TaskStore } from "../../src/db/TaskStore.js"
import { ConversationId } from "../../src/domain/ids.js"
import { utcMidnight } from "../../src/domain/task.js"
import { Gateway } from "../../src/gateway/Gateway.js"
import { Ingest } from "../../src/pipeline/Ingest.js"
import { Scheduler } from "../../src/schedules/Scheduler.js"
import { runNow } from "../../src/schedules/runs.js"
import { taskSummaries } from "../../src/schedules/summary.js"
import { tempDir } from "../support/db.js"
import { eventually } from "../support/eventually.js"
import { awaitSettled, sentLines } from "../support/host.js"
import { skipWithout } from "../support/system.js"
import { json, scriptedUpstream } from "../gateway/support.js"
import { awaitTurnEnd, runnerBundle, sandboxExecutor } from "../sandbox/support.js"

const KEY_ENV = "PYNCHY_SCHEDULE_TEST_KEY"

const config = (dir: string, upstreamUrl: string, workspace: Record<string, unknown>): PynchyConfig =>
  Either.getOrThrow(decodeConfig({
    dataDir: dir,
    providers: [{ name: "up", kind: "openai-compatible", baseUrl: upstreamUrl, apiKeyEnv: KEY_ENV, models: ["tiny"] }],
    workspaces: [{ id: "main", agentCore: "openai", ...workspace }],
    routes: [{ connection: "test", place: "*", workspace: "main" }],
    connections: { test: { kind: "recording", file: "sent.jsonl", idempotent: true } }
  }, "test config"))

const usage = (prompt: number, completion: number) => ({ prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion })

const toolCall = (n: number, name: string, args: unknown) =>
  JSON.stringify({
    id: `c${n}`, object: "chat.completion", model: "tiny",
    choices: [{ index: 0, finish_reason: "tool_calls", message: { role: "assistant", content: null, tool_calls: [{ id: `call_${n}`, type: "function", function: { name, arguments: JSON.stringify(args) } }] } }],
    usage: usage(100, 10)
  })

const answer = (n: number, text: string, u = usage(100, 10)) =>
  JSON.stringify({ id: `c${n}`, object: "chat.completion", model: "tiny", choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content: text } }], usage: u })

/** The host with the sandbox executor using the stack's own gateway (its usage goes to the events table). */
const hostWith = (cfg: PynchyConfig) =>
  Effect.gen(function* () {
    process.env[KEY_ENV] = "sk-schedule-test"
    yield* Effect.addFinalizer(() => Effect.sync(() => delete process.env[KEY_ENV]))
    const runnerPath = yield* Effect.promise(runnerBundle)
    return yield* Layer.build(makeTestHost(cfg, { executor: sandboxExecutor(cfg, { runnerPath }) }))
  })

describe.skipIf(skipWithout("bwrap", "apt-get install bubblewrap"))("scheduled work through the gateway and a sandboxed agent", () => {
  it.scopedLive("an agent creates, lists and cancels a task through tool calls; the task row shows it", () =>
    Effect.gen(function* () {
      const results: Array<string> = []
      const upstream = yield* scriptedUpstream((hit, res, n) => {
        const last = (hit.body as { messages: Array<{ role: string; content: string }> }).messages.at(-1)!
        if (last.role === "tool") results.push(last.content)
        if (n === 1) return json(res, 200, toolCall(n, "tasks__schedule", { prompt: "water the plants", everySeconds: 3600, dailyTokens: 5000 }))
        if (n === 2) return json(res, 200, toolCall(n, "tasks__list", {}))
        if (n === 3) return json(res, 200, toolCall(n, "tasks__cancel", { id: (JSON.parse(results[0]!) as { id: string }).id }))
        return json(res, 200, answer(n, `done: ${last.content}`))
      })
      const dir = tempDir()
      const ctx = yield* hostWith(config(dir, upstream.url, {}))
      yield* Effect.flatMap(Ingest, (i) => i.ingest({ connection: "test", place: "room", providerEventId: "e1", sender: "u", text: "remind me hourly to water the plants, then never mind" })).pipe(Effect.provide(ctx))
      const conv = ConversationId.make("test:room")
      const turn = yield* awaitTurnEnd(conv).pipe(Effect.provide(ctx))
      assert.strictEqual(turn.status, "completed", turn.error ?? "")
      yield* awaitSettled(conv, 1).pipe(Effect.provide(ctx))

      // What each tool call answered, as the agent read it.
      const scheduled = JSON.parse(results[0]!) as { id: string; nextDue: string; conversation: string }
      assert.match(scheduled.id, /^t-/)
      assert.strictEqual(scheduled.conversation, "test:room")
      const listed = JSON.parse(results[1]!) as { tasks: Array<{ id: string; prompt: string; when: string; dailyTokens: number }> }
      assert.deepStrictEqual(listed.tasks.map((t) => [t.id, t.prompt, t.when, t.dailyTokens]), [[scheduled.id, "water the plants", "every 3600s", 5000]])
      assert.deepStrictEqual(JSON.parse(results[2]!), { cancelled: scheduled.id })
      assert.deepStrictEqual(sentLines(dir).map((l) => l.text), [`done: {"cancelled":"${scheduled.id}"}`])

      // The row: the workspace's, in the conversation it was made from, with its cap, cancelled, never run.
      const store = yield* Effect.provide(TaskStore, ctx)
      const row = Option.getOrThrow(yield* store.get(scheduled.id))
      assert.deepStrictEqual(
        [row.kind, row.workspace, row.conversationId, row.prompt, row.everyMs, row.dailyTokens, row.status, row.nextDue],
        ["task", "main", "test:room", "water the plants", 3_600_000, 5000, "cancelled", null]
      )
      assert.deepStrictEqual(yield* store.runs(scheduled.id, 10), [])
      // Each of the four upstream calls is recorded as this turn's usage.
      const host = yield* Effect.provide(HostStore, ctx)
      const turnUsage = yield* eventually(Effect.map(host.recentEvents(100), (events) => {
        const u = events.filter((e) => e.type === "gateway.call").map((e) => e.payload as { turnId: number; totalTokens: number })
        return u.length >= 4 ? u : undefined
      }), { label: "four usage events" })
      assert.deepStrictEqual(turnUsage.map((u) => [u.turnId, u.totalTokens]), [[turn.id, 110], [turn.id, 110], [turn.id, 110], [turn.id, 110]])
    }))

  it.scopedLive("a schedule's tokens today are its turns' gateway usage; at its daily cap the next run is skipped with the reason; the spend counts against the workspace's budget", () =>
    Effect.gen(function* () {
      // Each turn is one upstream call that reports 30,010 tokens.
      const upstream = yield* scriptedUpstream((_hit, res, n) => json(res, 200, answer(n, `checked ${n}`, usage(30_000, 10))))
      const dir = tempDir()
      // Due once a year: the test makes it due when it wants a run, so runs never overlap.
      const ctx = yield* hostWith(config(dir, upstream.url, {
        schedule: "0 0 1 1 *", timezone: "UTC", scheduledPrompt: "check the feeds", deliverTo: "test:sched", scheduleDailyTokens: 50_000
      }))
      const store = yield* Effect.provide(TaskStore, ctx)
      const scheduler = yield* Effect.provide(Scheduler, ctx)
      const dueNow = Effect.gen(function* () {
        const task = Option.getOrThrow(yield* store.get("ws:main"))
        const now = yield* Clock.currentTimeMillis
        yield* store.upsert({ ...task, nextDue: now }, now)
        yield* scheduler.wake
        return now
      })
      const settled = (dueAt: number) =>
        eventually(Effect.map(store.runs("ws:main", 10), (runs) => runs.find((r) => r.dueAt === dueAt && r.outcome !== "queued")), { label: `the run due ${dueAt} settled` })

      const first = yield* settled(yield* dueNow)
      assert.strictEqual(first.outcome, "delivered")
      // Usage is written by the gateway's event log in batches: wait for it before the next run fires.
      const spent = (n: number) => eventually(Effect.map(store.tokensSince(utcMidnight(Date.now()), "ws:main"), (m) => ((m.get("ws:main") ?? 0) >= n ? m.get("ws:main") : undefined)), { label: `${n} tokens recorded` })
      assert.strictEqual(yield* spent(30_010), 30_010)
      // 30,010 of 50,000 used: the second run goes ahead (its token may spend the 19,990 left).
      const second = yield* settled(yield* dueNow)
      assert.strictEqual(second.outcome, "delivered")
      assert.strictEqual(yield* spent(60_020), 60_020)
      // At the cap: skipped, recorded with the reason, no turn, no upstream call.
      const third = yield* settled(yield* dueNow)
      assert.strictEqual(third.outcome, "skipped")
      assert.strictEqual(third.reason, "daily token cap: 60020 of 50000 tokens used today (UTC)")
      assert.strictEqual(third.messageId, null)
      assert.strictEqual(upstream.hits.length, 2)
      assert.deepStrictEqual(sentLines(dir).map((l) => l.text), ["checked 1", "checked 2"])

      // `pynchy status` / `pynchy tasks`: tokens today from the usage records, the cap, the skipped run and why.
      const [summary] = yield* taskSummaries.pipe(Effect.provide(ctx))
      assert.deepStrictEqual([summary!.id, summary!.tokensToday, summary!.dailyTokens, summary!.lastRun?.outcome, summary!.lastRun?.reason], [
        "ws:main", 60_020, 50_000, "skipped", "daily token cap: 60020 of 50000 tokens used today (UTC)"
      ])
      // `pynchy tasks run` spends from the same cap: refused with the reason, nothing queued.
      const manual = yield* runNow("ws:main").pipe(Effect.provide(ctx))
      assert.deepStrictEqual(manual, Either.left("ws:main has used its daily token cap (60020 of 50000 tokens today, UTC); it can run again after midnight UTC"))
      assert.strictEqual((yield* store.runs("ws:main", 10)).length, 3)
      // Like any turn, the scheduled turns were charged to the workspace's daily gateway budget.
      const gateway = yield* Effect.provide(Gateway, ctx)
      assert.strictEqual((yield* gateway.status).usageToday.main?.used, 60_020)
      const recorded = yield* Effect.flatMap(HostStore, (h) => h.tokensUsedSince(utcMidnight(Date.now()))).pipe(Effect.provide(ctx))
      assert.deepStrictEqual(recorded, [{ workspace: "main", tokens: 60_020 }])
    }))
})
