/**
 * A turn's context: the conversation's summary and recent history, within the workspace's
 * budgets (docs/agent.md). History is read newest first, a page at a time, until the budget
 * is spent; what no longer fits is summarized once into a durable row that later turns reuse.
 */
import { Context, Effect, Layer, Option } from "effect"
import { ContextStore, type Position, type SummaryRow, type TimelineEntry } from "../db/ContextStore.js"
import { EventBus } from "../events/EventBus.js"
import { Gateway } from "../gateway/Gateway.js"
import type { HistoryEntry } from "../protocol/ipc.js"
import type { ConversationId } from "../domain/ids.js"
import type { TurnInput } from "./AgentExecutor.js"
import { summarize, type SummaryFailed } from "./summarize.js"
import { counterFor, MESSAGE_OVERHEAD, type TokenCounter } from "./tokens.js"
import { openTimeline } from "./timeline.js"

export interface TurnContext {
  readonly summary: string | null
  /** Oldest first. */
  readonly history: ReadonlyArray<HistoryEntry>
  /** Tokens the history holds, by `counter`. */
  readonly historyTokens: number
  /** `o200k_base`, `cl100k_base` or `estimate`. */
  readonly counter: string
  /** What happened to the window this turn. */
  readonly compaction: "none" | "summarized" | "cut"
  /** The message id the conversation's context starts at (moved forward by `/new`). */
  readonly contextStart: number
}

export declare namespace ConversationContext {
  export interface Service {
    /**
     * The summary and history for a turn: user messages and delivered replies from the context
     * start up to the turn's new messages, newest kept first within `memory.historyTokens`. When
     * more than the budget is unsummarized, the older part is summarized through the gateway by
     * `model`; a failed summary cuts the history to the budget and records `memory.summary_failed`.
     */
    readonly build: (input: TurnInput, model: string | null) => Effect.Effect<TurnContext>
  }
}

const CACHE_LIMIT = 200_000
const HINT_LIMIT = 10_000
const SUMMARY_DEADLINE_MS = 60_000

export class ConversationContext extends Context.Tag("pynchy/ConversationContext")<ConversationContext, ConversationContext.Service>() {
  static readonly make = Effect.gen(function* () {
    const store = yield* ContextStore
    const bus = yield* EventBus
    const gateway = yield* Gateway
    // Message and reply texts never change, so their counts are kept per counter (bounded, oldest
    // dropped first), keyed by a number: 2 * id + kind.
    const countsBy = new Map<string, Map<number, number>>()
    const costOf = (counter: TokenCounter, e: TimelineEntry) => {
      let counts = countsBy.get(counter.name)
      if (counts === undefined) countsBy.set(counter.name, counts = new Map())
      const key = 2 * e.id + e.kind
      let n = counts.get(key)
      if (n === undefined) {
        n = MESSAGE_OVERHEAD + counter.count(e.text) + (e.kind === 0 ? Math.ceil(e.sender.length / 4) + 1 : 0)
        if (counts.size >= CACHE_LIMIT) counts.delete(counts.keys().next().value!)
        counts.set(key, n)
      }
      return n
    }
    // The first read is sized to what the window will take: what this conversation's previous
    // build took (bounded map, oldest dropped first), else the budget over the average entry seen.
    const took = new Map<ConversationId, { readonly users: number; readonly replies: number }>()
    let averageEntry = 20
    const firstPage = (conversationId: ConversationId, budget: number) => {
      const last = took.get(conversationId)
      if (last !== undefined) return { users: last.users + (last.users >> 4) + 8, replies: last.replies + (last.replies >> 4) + 8 }
      const half = Math.ceil(budget / averageEntry / 2) + 8
      return { users: half, replies: half }
    }

    const build = Effect.fn("ConversationContext.build")(function* (input: TurnInput, model: string | null) {
      const conversationId = input.conversation.id
      const { historyTokens: budget, summaryTokens } = input.workspace.memory
      const counter = yield* counterFor(model)
      const start = yield* store.start(conversationId)
      const previous = yield* store.latestSummary(conversationId, start.messageId)
      const floor: Position | null = Option.match(previous, { onNone: () => null, onSome: (s) => ({ turn: s.throughTurn, kind: s.throughKind, id: s.throughId }) })
      const firstNew = input.messages.reduce((min, m) => Math.min(min, m.id), Number.MAX_SAFE_INTEGER)
      const history = openTimeline(store, { conversationId, start, beforeTurn: input.turn.id, beforeMessage: firstNew, floor, firstPage: firstPage(conversationId, budget) })

      const window: Array<TimelineEntry> = []
      let used = 0
      let overflow: TimelineEntry | undefined
      yield* history.walk((e) => {
        const cost = costOf(counter, e)
        if (used + cost > budget) {
          overflow = e
          return false
        }
        window.push(e)
        used += cost
        return true
      })
      if (took.size >= HINT_LIMIT && !took.has(conversationId)) took.delete(took.keys().next().value!)
      took.set(conversationId, history.consumed())
      if (window.length > 0) averageEntry = Math.max(MESSAGE_OVERHEAD + 1, used / window.length)
      // Senders are named when the window's user entries and the new messages have more than one.
      let sender: string | undefined
      let named = false
      const see = (name: string) => {
        if (sender === undefined) sender = name
        else if (name !== sender) named = true
      }
      for (let i = 0; i < window.length && !named; i++) if (window[i]!.kind === 0) see(window[i]!.sender)
      for (const m of input.messages) see(m.sender)
      const result = (entries: ReadonlyArray<TimelineEntry>, tokens: number, summary: string | null, compaction: TurnContext["compaction"]): TurnContext => {
        const history = new Array<HistoryEntry>(entries.length)
        for (let i = 0, j = entries.length - 1; j >= 0; i++, j--) {
          const e = entries[j]!
          history[i] = e.kind === 0 && named ? { role: e.role, text: e.text, sender: e.sender } : { role: e.role, text: e.text }
        }
        return { summary, history, historyTokens: tokens, counter: counter.name, compaction, contextStart: start.messageId }
      }
      const previousText = Option.match(previous, { onNone: () => null, onSome: (s) => s.text })
      if (overflow === undefined) return result(window, used, previousText, "none")

      const cut = (code: string) =>
        Effect.gen(function* () {
          yield* Effect.logWarning("conversation summary failed: history cut to its budget").pipe(
            Effect.annotateLogs({ conversation: conversationId, workspace: input.workspace.id, turn: input.turn.id, code })
          )
          yield* bus.publish({ type: "memory.summary_failed", conversationId, workspace: input.workspace.id, turnId: input.turn.id, code })
          return result(window, used, previousText, "cut")
        })
      // Neither way out summarizes, so neither reads what fell out of the window.
      if (summaryTokens === 0) return result(window, used, previousText, "cut")
      if (model === null) return yield* cut("no_model")

      // Compaction keeps the newest half of the budget, so the next summary is due only after
      // another half budget of conversation, not at every turn.
      let kept = 0
      let keptTokens = 0
      while (kept < window.length && keptTokens + costOf(counter, window[kept]!) <= budget / 2) keptTokens += costOf(counter, window[kept++]!)
      const dropped = [...window.slice(kept), overflow]
      // What fell out is read up to one more budget; older unsummarized text beyond that is left out.
      let droppedTokens = dropped.reduce((n, e) => n + costOf(counter, e), 0)
      if (droppedTokens < 2 * budget) {
        yield* history.walk((e) => {
          dropped.push(e)
          droppedTokens += costOf(counter, e)
          return droppedTokens < 2 * budget
        })
      }
      const through = dropped[0]!
      const users = dropped.filter((e) => e.kind === 0)
      const summary = yield* summarize(gateway, {
        workspace: input.workspace.id,
        conversationId,
        model,
        previous: previousText,
        transcript: [...dropped].reverse().map((e) => `${e.kind === 0 ? (e.sender || "user") : "assistant"}: ${e.text}`),
        maxTokens: summaryTokens,
        timeoutMs: Math.min(SUMMARY_DEADLINE_MS, input.workspace.sandbox.timeoutSeconds * 500)
      }).pipe(Effect.either)
      if (summary._tag === "Left") return yield* cut((summary.left as SummaryFailed).code)
      const text = capTokens(counter, summary.right, summaryTokens)
      const row: Omit<SummaryRow, "id" | "createdAt"> = {
        contextStart: start.messageId,
        firstMessageId: users.at(-1)?.id ?? null,
        lastMessageId: users[0]?.id ?? null,
        throughTurn: through.turn,
        throughKind: through.kind,
        throughId: through.id,
        text,
        tokens: counter.count(text),
        model
      }
      yield* store.addSummary(conversationId, row)
      yield* Effect.logInfo("conversation summarized").pipe(Effect.annotateLogs({ conversation: conversationId, turn: input.turn.id, entries: dropped.length }))
      return result(window.slice(0, kept), keptTokens, text, "summarized")
    })

    return ConversationContext.of({ build })
  })

  /** No memory: every turn gets only its new messages (an executor run outside a host, in tests). */
  static readonly layerNone = Layer.succeed(ConversationContext, ConversationContext.of({
    build: () => Effect.succeed({ summary: null, history: [], historyTokens: 0, counter: "estimate", compaction: "none", contextStart: 0 })
  }))

  /** The context service and the store it reads (TurnRunner moves the context start through it). */
  static readonly layer = Layer.provideMerge(Layer.effect(ConversationContext, ConversationContext.make), ContextStore.layer)
}

/** A summary longer than its budget is cut (a model may not honour max_tokens). */
const capTokens = (counter: TokenCounter, text: string, max: number) => {
  let t = text
  for (let n = counter.count(t); n > max && t.length > 0; n = counter.count(t)) t = t.slice(0, Math.floor((t.length * max) / n) - 1)
  return t
}
