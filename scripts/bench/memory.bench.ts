/**
 * History assembly (issue 12, item 9): ConversationContext.build for a turn at the end of a
 * conversation of 100,000 messages (50,000 exchanges, each a user message and a sent reply) in a
 * SQLite file, with the default budget (16,000 history tokens). Figures, not tests.
 */
import { EventBus } from "../../src/events/EventBus.js"
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Logger, LogLevel, ManagedRuntime } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Database from "../../src/db/Database.js"
import * as Stores from "../../src/db/Stores.js"
import { MessageStore } from "../../src/db/MessageStore.js"
import { ConversationId, ExecutorId, WorkspaceId } from "../../src/domain/ids.js"
import { MemorySettings, Workspace } from "../../src/domain/workspace.js"
import { Gateway } from "../../src/gateway/Gateway.js"
import type { TurnInput } from "../../src/pipeline/AgentExecutor.js"
import { ConversationContext } from "../../src/pipeline/ConversationContext.js"
import { counterFor } from "../../src/pipeline/tokens.js"
import { median, percentile } from "./stats.js"
import type { Row } from "./types.js"
import { turnInput } from "../../test/support/turn-input.js"

const EXCHANGES = 50_000
const RUNS = 300
const conv = ConversationId.make("bench:room")
const progress = (s: string) => process.stderr.write(`[memory] ${s}\n`)

// Never reached: the figures below are taken where no summary is due.
const noGateway = Layer.succeed(Gateway, { socketPath: null, url: null } as unknown as Gateway.Service)

const inputFor = (turnId: number, messageId: number, memory: { historyTokens?: number; summaryTokens?: number }): TurnInput =>
  turnInput({
    executor: ExecutorId.make("sandbox:000000000000"),
    workspace: Workspace.make({ id: WorkspaceId.make("main"), memory: MemorySettings.make(memory) }),
    messages: [{ id: messageId, text: "and now?", sender: "u" }],
    turnId,
    conversationId: conv
  })

export default async (): Promise<Array<Row>> => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pynchy-memory-bench-"))
  const runtime = ManagedRuntime.make(
    ConversationContext.layer.pipe(
      Layer.provideMerge(Layer.mergeAll(Stores.layer, noGateway, EventBus.layer)),
      Layer.provideMerge(Database.layerFile(path.join(dir, "pynchy.db"))),
      Layer.provide(Logger.minimumLogLevel(LogLevel.Warning)),
      Layer.orDie
    )
  )
  try {
    const t0 = performance.now()
    const last = await runtime.runPromise(Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* sql`INSERT INTO conversations (id, connection, place, workspace, created_at) VALUES (${conv}, 'bench', 'room', 'main', 0)`
      for (let from = 1; from <= EXCHANGES; from += 5_000) {
        const ids = JSON.stringify(Array.from({ length: 5_000 }, (_, i) => from + i))
        yield* sql.withTransaction(Effect.gen(function* () {
          yield* sql`INSERT INTO turns (id, conversation_id, status, attempts, created_at, updated_at) SELECT value, ${conv}, 'completed', 1, 0, 0 FROM json_each(${ids})`
          yield* sql`INSERT INTO messages (conversation_id, direction, sender, text, created_at, handled_by)
            SELECT ${conv}, 'in', 'u', 'message ' || value || ': ' || substr('tell me more about the weather, the sea and the mountains; ', 1, 20 + value % 40), 0, value FROM json_each(${ids})`
          yield* sql`INSERT INTO deliveries (idempotency_key, conversation_id, turn_id, kind, text, status, created_at, updated_at)
            SELECT 'k' || value, ${conv}, value, 'reply', 'reply ' || value || ': ' || substr('sure, here is what I know about it, in a few more words than asked; ', 1, 30 + value % 50), 'sent', 0, 0 FROM json_each(${ids})`
        }))
      }
      const rows = yield* sql<{ id: number }>`INSERT INTO messages (conversation_id, direction, sender, text, created_at) VALUES (${conv}, 'in', 'u', 'and now?', 0) RETURNING id`
      return rows[0]!.id
    }))
    progress(`seeded ${EXCHANGES * 2} messages in ${((performance.now() - t0) / 1000).toFixed(1)} s`)
    const turn = EXCHANGES + 1

    const measure = async (label: string, model: string | null, memory: { historyTokens?: number; summaryTokens?: number }) => {
      const input = inputFor(turn, last, memory)
      const samples: Array<number> = []
      let entries = 0
      for (let i = 0; i < 20 + RUNS; i++) {
        const s = performance.now()
        const ctx = await runtime.runPromise(Effect.flatMap(ConversationContext, (m) => m.build(input, model)))
        if (i >= 20) samples.push(performance.now() - s)
        entries = ctx.history.length
      }
      progress(`${label}: p50 ${median(samples).toFixed(2)} ms, p99 ${percentile(samples, 99).toFixed(2)} ms, ${entries} entries`)
      return { p50: median(samples), p99: percentile(samples, 99), entries }
    }

    // The o200k_base encoding loads once per process (about a second, tens of MB of tables): load
    // it before anything is timed, so the collection of its load garbage is not counted as a build.
    await runtime.runPromise(counterFor("gpt-4o"))
    // Baseline: the last 200 messages through MessageStore.recent (one plain indexed query).
    const recent: Array<number> = []
    for (let i = 0; i < 20 + RUNS; i++) {
      const s = performance.now()
      await runtime.runPromise(Effect.flatMap(MessageStore, (m) => m.recent(conv, 200)))
      if (i >= 20) recent.push(performance.now() - s)
    }
    const base = { name: "MessageStore.recent(200)", value: median(recent) }
    // Window full, nothing summarized (summaryTokens 0: the window is cut, no summary is asked for).
    const cut = await measure("estimate, cut at budget", null, { summaryTokens: 0 })
    const tok = await measure("o200k_base, cut at budget", "gpt-4o", { summaryTokens: 0 })
    return [
      { name: `history of a 100k-message conversation, p50 (${cut.entries} entries, estimate)`, value: cut.p50, unit: "ms", baseline: base, goal: "≤ 2 ms" },
      { name: "history of a 100k-message conversation, p99 (estimate)", value: cut.p99, unit: "ms", baseline: base, goal: "≤ 10 ms" },
      { name: `history of a 100k-message conversation, p50 (${tok.entries} entries, o200k_base, counts cached)`, value: tok.p50, unit: "ms", baseline: base, goal: "≤ 2 ms" },
      { name: "history of a 100k-message conversation, p99 (o200k_base, counts cached)", value: tok.p99, unit: "ms", baseline: base, goal: "≤ 10 ms" }
    ]
  } finally {
    await runtime.dispose()
    fs.rmSync(dir, { recursive: true, force: true })
  }
}
