import { Effect, Either } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { decodeConfig } from "../../src/config/HostConfig.js"
import type { PynchyConfig } from "../../src/config/schema.js"
import { DeliveryStore } from "../../src/db/DeliveryStore.js"
import { TurnStore } from "../../src/db/TurnStore.js"
import type { ConversationId } from "../../src/domain/ids.js"
import type { Turn } from "../../src/domain/turn.js"
import { tempDir } from "./db.js"
import { eventually } from "./eventually.js"

/** A config with one `test` connection served by a recording channel writing into `dir`. */
export const recordingConfig = (dir: string = tempDir(), options: { idempotent?: boolean; maxConcurrentTurns?: number; maxTurnAttempts?: number; retryBaseMs?: number; runtimeTimeoutsMs?: { start: number; ready: number; close: number; check: number }; /** More top-level sections (`database`, `cluster`). */ sections?: Record<string, unknown> } = {}): PynchyConfig =>
  Either.getOrThrow(decodeConfig({
    ...options.sections,
    dataDir: dir,
    workspaces: [{ id: "main", instructions: "test" }],
    routes: [{ connection: "test", place: "*", workspace: "main", enabled: true }],
    connections: { test: { kind: "recording", file: "sent.jsonl", idempotent: options.idempotent ?? true } },
    limits: {
      maxConcurrentTurns: options.maxConcurrentTurns ?? 4,
      maxTurnAttempts: options.maxTurnAttempts ?? 3,
      retryBaseMs: options.retryBaseMs ?? 1_000,
      runtimeStartTimeoutMs: options.runtimeTimeoutsMs?.start ?? 5_000,
      runtimeCloseTimeoutMs: options.runtimeTimeoutsMs?.close ?? 5_000,
      runtimeReadyTimeoutMs: options.runtimeTimeoutsMs?.ready ?? 5_000,
      readinessCheckMs: options.runtimeTimeoutsMs?.check ?? 100,
      shutdownTimeoutMs: 5_000
    }
  }, "test config"))

/**
 * The lines a recording channel has written to `<dir>/sent.jsonl`, read while a host may be
 * writing: only lines already ended by their newline (the channel appends a line and its newline
 * in one write, but a reader can find the file created and still empty, or the write half done).
 */
export const sentLines = (dir: string): Array<{ key: string; conversation: string; kind: string; text: string }> => {
  const file = path.join(dir, "sent.jsonl")
  if (!fs.existsSync(file)) return []
  const lines = fs.readFileSync(file, "utf8").split("\n")
  lines.pop() // "" after the last newline, or a line still being written
  return lines.filter((l) => l.trim() !== "").map((l) => JSON.parse(l))
}

/** Waits (no wall-clock assertion) until the conversation has `n` settled deliveries. */
export const awaitSettled = (conversationId: ConversationId, n: number) =>
  Effect.flatMap(DeliveryStore, (store) =>
    eventually(
      Effect.map(store.byConversation(conversationId, 1_000), (all) => (all.filter((d) => d.status !== "pending").length >= n ? all : undefined)),
      { label: `${n} settled deliveries in ${conversationId}` }
    ))

/**
 * The conversation's latest turn once it has ended (completed, blocked or failed). A reply is
 * sent while its turn is still finishing, so a test that saw the reply waits for this before it
 * reads the turn's status.
 */
export const awaitLatestTurnEnded = (conversationId: ConversationId) =>
  Effect.flatMap(TurnStore, (turns) =>
    eventually(
      Effect.map(turns.recent(conversationId, 1), ([turn]): Turn | undefined =>
        turn !== undefined && (turn.status === "completed" || turn.status === "blocked" || turn.status === "failed") ? turn : undefined),
      { label: `the latest turn of ${conversationId} ended` }
    ))
