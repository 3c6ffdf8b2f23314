/** Helpers for the memory tests: a conversation seeded straight into the database, turn inputs, the service over a gateway. */
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { HostConfig } from "../../src/config/HostConfig.js"
import { PynchyConfig } from "../../src/config/schema.js"
import * as Database from "../../src/db/Database.js"
import { EventBus } from "../../src/events/EventBus.js"
import { EventLog } from "../../src/observers/EventLog.js"
import { Observers } from "../../src/observers/Observers.js"
import * as Stores from "../../src/db/Stores.js"
import { ConversationId, ExecutorId, WorkspaceId } from "../../src/domain/ids.js"
import { MemorySettings, Workspace } from "../../src/domain/workspace.js"
import { Gateway } from "../../src/gateway/Gateway.js"
import type { TurnInput } from "../../src/pipeline/AgentExecutor.js"
import { ConversationContext } from "../../src/pipeline/ConversationContext.js"
import { provider, startGateway } from "../gateway/support.js"
import { turnInput } from "../support/turn-input.js"

export const conv = ConversationId.make("test:room")

/** The event bus with the event log (the memory's events land in the events table). */
const eventLog = Layer.provideMerge(EventLog.layer, Layer.provideMerge(Observers.layer, EventBus.layer)).pipe(Layer.provide(HostConfig.layerFrom(PynchyConfig.make({}))))

/** The context service over an in-memory database and a gateway to `upstreamUrl` serving `tiny`. */
export const memoryLayer = (upstreamUrl: string) =>
  ConversationContext.layer.pipe(
    Layer.provideMerge(Layer.merge(Layer.scoped(Gateway, startGateway([provider({ name: "up", baseUrl: upstreamUrl, models: ["tiny"] })])), eventLog)),
    Layer.provideMerge(Stores.layer),
    Layer.provideMerge(Database.layerMemory),
    Layer.orDie
  )

/** Seeds turns, user messages and deliveries with plain SQL; ids are the database's. */
export const seeder = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`INSERT OR IGNORE INTO conversations (id, connection, place, workspace, created_at) VALUES (${conv}, 'test', 'room', 'main', 0)`
  const turn = Effect.map(
    sql<{ id: number }>`INSERT INTO turns (conversation_id, status, attempts, created_at, updated_at) VALUES (${conv}, 'completed', 1, 0, 0) RETURNING id`,
    (r) => r[0]!.id
  )
  const user = (text: string, handledBy: number | null, sender = "u") =>
    Effect.map(
      sql<{ id: number }>`INSERT INTO messages (conversation_id, direction, sender, text, created_at, handled_by) VALUES (${conv}, 'in', ${sender}, ${text}, 0, ${handledBy}) RETURNING id`,
      (r) => r[0]!.id
    )
  let key = 0
  const delivery = (turnId: number, text: string, status = "sent", kind = "reply") =>
    sql`INSERT INTO deliveries (idempotency_key, conversation_id, turn_id, kind, text, status, created_at, updated_at)
      VALUES (${`k${key++}`}, ${conv}, ${turnId}, ${kind}, ${text}, ${status}, 0, 0)`
  /** One finished exchange: a turn, its user message and its sent reply. */
  const exchange = (userText: string, replyText: string, sender = "u") =>
    Effect.gen(function* () {
      const t = yield* turn
      yield* user(userText, t, sender)
      yield* delivery(t, replyText)
      return t
    })
  /** A running turn with its new messages, as the runner hands it to the executor. */
  const next = (texts: ReadonlyArray<string>, memory: { readonly historyTokens?: number; readonly summaryTokens?: number } = {}, sender = "u") =>
    Effect.gen(function* () {
      const t = yield* turn
      const ids = yield* Effect.forEach(texts, (text) => user(text, null, sender))
      return inputFor(t, ids.map((id, i) => ({ id, text: texts[i]!, sender })), memory)
    })
  return { sql, turn, user, delivery, exchange, next }
}).pipe(Effect.orDie)

export const inputFor = (turnId: number, messages: ReadonlyArray<{ id: number; text: string; sender: string }>, memory: { readonly historyTokens?: number; readonly summaryTokens?: number } = {}): TurnInput =>
  turnInput({ executor: ExecutorId.make("sandbox:000000000000"), workspace: Workspace.make({ id: WorkspaceId.make("main"), memory: MemorySettings.make(memory) }), messages, turnId, conversationId: conv })

/** What the upstream answers to a summary request: a short fixed summary naming how many lines it read. */
export const summaryAnswer = (body: any) => {
  const lines = String(body.messages.at(-1).content).split("\n").length
  return JSON.stringify({
    id: "s", object: "chat.completion", model: "tiny",
    choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content: `summary of ${lines} lines` } }],
    usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 }
  })
}
