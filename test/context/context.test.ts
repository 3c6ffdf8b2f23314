/**
 * The context service over a real database and the real gateway, with a scripted upstream
 * answering (and recording) the summary requests: what the history holds, the budget,
 * compaction made once and reused, a failed summary, and 500 exchanges within budget.
 */
import { eventually } from "../support/eventually.js"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ConversationContext } from "../../src/pipeline/ConversationContext.js"
import { HostStore } from "../../src/db/HostStore.js"
import { ContextStore } from "../../src/db/ContextStore.js"
import { json, scriptedUpstream } from "../gateway/support.js"
import { conv, memoryLayer, seeder, summaryAnswer } from "./support.js"

const withMemory = <A, E>(script: Parameters<typeof scriptedUpstream>[0], body: (upstream: Effect.Effect.Success<ReturnType<typeof scriptedUpstream>>) => Effect.Effect<A, E, any>) =>
  Effect.gen(function* () {
    const upstream = yield* scriptedUpstream(script)
    return yield* body(upstream).pipe(Effect.provide(memoryLayer(upstream.url)))
  })

const mode = { refuse: false }
const answering = (hit: any, res: any) => json(res, 200, summaryAnswer(hit.body))

describe("conversation context", () => {
  it.scopedLive("holds earlier user messages and delivered replies, oldest first; no notices, pending or failed replies", () =>
    withMemory(answering, () =>
      Effect.gen(function* () {
        const s = yield* seeder
        const t1 = yield* s.exchange("my name is Zed", "Hello Zed!")
        yield* s.delivery(t1, "(a notice)", "sent", "notice")
        const t2 = yield* s.turn
        yield* s.user("are you there?", t2)
        yield* s.delivery(t2, "a reply that failed", "failed")
        yield* s.delivery(t2, "a reply still pending", "pending")
        yield* s.delivery(t2, "a reply of unknown fate", "unknown")
        const input = yield* s.next(["what is my name?"])
        const ctx = yield* (yield* ConversationContext).build(input, "tiny")
        assert.isNull(ctx.summary)
        assert.deepStrictEqual(ctx.history, [
          { role: "user", text: "my name is Zed" },
          { role: "assistant", text: "Hello Zed!" },
          { role: "user", text: "are you there?" }
        ])
        assert.strictEqual(ctx.counter, "estimate")
        assert.strictEqual(ctx.compaction, "none")
      })))

  it.scopedLive("names the senders where the conversation has several, and only then", () =>
    withMemory(answering, () =>
      Effect.gen(function* () {
        const s = yield* seeder
        const memory = yield* ConversationContext
        yield* s.exchange("hi, I am Ann", "Hi Ann", "ann")
        const alone = yield* memory.build(yield* s.next(["and again"], {}, "ann"), "tiny")
        assert.deepStrictEqual(alone.history[0], { role: "user", text: "hi, I am Ann" })
        const t = yield* s.exchange("hi, I am Bob", "Hi Bob", "bob")
        assert.isAbove(t, 0)
        const both = yield* memory.build(yield* s.next(["who is here?"], {}, "bob"), "tiny")
        assert.deepStrictEqual(both.history.filter((e) => e.role === "user"), [
          { role: "user", text: "hi, I am Ann", sender: "ann" },
          { role: "user", text: "and again", sender: "ann" },
          { role: "user", text: "hi, I am Bob", sender: "bob" }
        ])
        assert.isUndefined(both.history.find((e) => e.role === "assistant")!.sender)
      })))

  it.scopedLive("keeps the newest entries within the budget; with no summary budget it only cuts", ({ expect: _ }) =>
    withMemory(answering, (upstream) =>
      Effect.gen(function* () {
        const s = yield* seeder
        for (let i = 0; i < 40; i++) yield* s.exchange(`question ${i} ${"x".repeat(36)}`, `answer ${i} ${"y".repeat(36)}`)
        const ctx = yield* (yield* ConversationContext).build(yield* s.next(["now"], { historyTokens: 200, summaryTokens: 0 }), "tiny")
        assert.isAtMost(ctx.historyTokens, 200)
        assert.isAbove(ctx.history.length, 0)
        assert.strictEqual(ctx.history.at(-1)!.text, `answer 39 ${"y".repeat(36)}`)
        assert.strictEqual(ctx.compaction, "cut")
        assert.isNull(ctx.summary)
        assert.strictEqual(upstream.hits.length, 0)
      })))

  it.scopedLive("summarizes what falls out once, through the gateway, and reuses the summary in later turns", () =>
    withMemory(answering, (upstream) =>
      Effect.gen(function* () {
        const s = yield* seeder
        const memory = yield* ConversationContext
        for (let i = 0; i < 40; i++) yield* s.exchange(`question ${i} ${"x".repeat(36)}`, `answer ${i} ${"y".repeat(36)}`)
        const first = yield* memory.build(yield* s.next(["now"], { historyTokens: 400 }), "tiny")
        assert.strictEqual(first.compaction, "summarized")
        assert.strictEqual(upstream.hits.length, 1)
        const request = upstream.hits[0]!
        assert.strictEqual(request.path, "/v1/chat/completions")
        assert.strictEqual(request.body.model, "tiny")
        assert.strictEqual(request.body.max_tokens, 1000)
        // What fell out of the window, oldest first, up to the entry just before what is kept.
        const transcript: string = request.body.messages.at(-1).content
        assert.match(transcript, /u: question \d+ x+\nassistant: answer \d+ y+/)
        assert.notInclude(transcript, first.history[0]!.text)
        assert.match(first.summary!, /^summary of \d+ lines$/)
        assert.isAtMost(first.historyTokens, 200)
        // The history starts right after what the summary covers.
        const row = yield* (yield* ContextStore).latestSummary(conv, 0)
        assert.isTrue(row._tag === "Some")
        // The next turn reuses it: no new request, the same text, the window after it.
        const t = yield* s.turn
        yield* s.sql`UPDATE messages SET handled_by = ${t} WHERE handled_by IS NULL`
        yield* s.delivery(t, "the answer to now")
        const second = yield* memory.build(yield* s.next(["later"], { historyTokens: 400 }), "tiny")
        assert.strictEqual(second.compaction, "none")
        assert.strictEqual(second.summary, first.summary)
        assert.strictEqual(upstream.hits.length, 1)
        assert.deepStrictEqual(second.history.slice(-2), [{ role: "user", text: "now" }, { role: "assistant", text: "the answer to now" }])
        assert.deepStrictEqual(second.history.slice(0, first.history.length), first.history)
      })))

  it.scopedLive("a failed or refused summary cuts the history to the budget, records the event, and does not fail", () =>
    withMemory((_hit, res) => (mode.refuse ? json(res, 200, JSON.stringify({
      id: "r", object: "chat.completion", model: "tiny", choices: [{ index: 0, finish_reason: "content_filter", message: { role: "assistant", content: "" } }],
      usage: { prompt_tokens: 1, completion_tokens: 0, total_tokens: 1 }
    })) : json(res, 400, "{\"error\":{\"message\":\"no\"}}")), (upstream) =>
      Effect.gen(function* () {
        const s = yield* seeder
        const memory = yield* ConversationContext
        for (let i = 0; i < 40; i++) yield* s.exchange(`question ${i} ${"x".repeat(36)}`, `answer ${i} ${"y".repeat(36)}`)
        const failed = yield* memory.build(yield* s.next(["now"], { historyTokens: 300 }), "tiny")
        assert.strictEqual(failed.compaction, "cut")
        assert.isNull(failed.summary)
        assert.isAtMost(failed.historyTokens, 300)
        assert.strictEqual(failed.history.at(-1)!.text, `answer 39 ${"y".repeat(36)}`)
        mode.refuse = true
        const refused = yield* memory.build(yield* s.next(["again"], { historyTokens: 300 }), "tiny")
        assert.strictEqual(refused.compaction, "cut")
        assert.isAtLeast(upstream.hits.length, 2)
        const store = yield* HostStore
        const events = yield* eventually(
          Effect.map(store.recentEvents(10), (rows) => {
            const failures = rows.filter((e) => e.type === "memory.summary_failed")
            return failures.length === 2 ? failures : undefined
          }),
          { label: "two memory.summary_failed events in the event log" }
        )
        assert.strictEqual(events.length, 2)
        const codes = events.map((e) => (e.payload as { code: string }).code)
        assert.include(codes, "summary_refused")
        assert.isTrue(codes.some((c) => c.startsWith("summary_http_")), codes.join(","))
        // Nothing of the conversation's text is in the event.
        assert.notInclude(JSON.stringify(events), "question")
      })))

  it.scopedLive("500 exchanges: every turn's history stays within its budget and the summary within its own", () =>
    withMemory(answering, (upstream) =>
      Effect.gen(function* () {
        const s = yield* seeder
        const memory = yield* ConversationContext
        const budget = { historyTokens: 600, summaryTokens: 50 }
        let summarized = 0
        for (let i = 0; i < 500; i++) {
          const input = yield* s.next([`message ${i}: ${"words ".repeat(5 + (i % 13))}`], budget)
          const ctx = yield* memory.build(input, "tiny")
          assert.isAtMost(ctx.historyTokens, budget.historyTokens, `turn ${i}`)
          if (ctx.summary !== null) assert.isAtMost(Math.ceil(ctx.summary.length / 4), budget.summaryTokens)
          if (ctx.compaction === "summarized") summarized++
          assert.notStrictEqual(ctx.compaction, "cut", `turn ${i}`)
          // The turn ends: its message handled, its reply delivered.
          yield* s.sql`UPDATE messages SET handled_by = ${input.turn.id} WHERE id = ${input.messages[0]!.id}`
          yield* s.delivery(input.turn.id, `reply ${i}: ${"sure ".repeat(4 + (i % 7))}`)
        }
        // Made once per half budget of conversation, not every turn; every one went to the upstream.
        assert.strictEqual(upstream.hits.length, summarized)
        assert.isAbove(summarized, 10)
        assert.isBelow(summarized, 500 / 4)
        // Later summaries extend the earlier ones.
        assert.include(upstream.hits.at(-1)!.body.messages.at(-1).content, "The summary so far:")
      })))
})
