import { SqlClient, SqlSchema } from "@effect/sql"
import { Clock, Context, Data, Effect, Layer, Option, Schema } from "effect"
import { ConversationId, ExecutorId, HostEpoch, MessageId, TurnId } from "../domain/ids.js"
import type { Message } from "../domain/message.js"
import { Turn, TurnOwner, TurnStatus } from "../domain/turn.js"
import type { Conversation } from "../domain/workspace.js"
import { conversationColumns, conversationOfRow, messageColumns, messageOfRow } from "./MessageStore.js"
import * as Tx from "./Transactions.js"

const TurnRow = Schema.Struct({
  id: TurnId,
  conversationId: ConversationId,
  status: TurnStatus,
  attempts: Schema.Int,
  ownerEpoch: Schema.NullOr(HostEpoch),
  executorId: Schema.NullOr(ExecutorId),
  notBefore: Schema.Number,
  error: Schema.NullOr(Schema.String),
  createdAt: Schema.Number,
  updatedAt: Schema.Number
})
type TurnRow = typeof TurnRow.Type

// The row is decoded already: the classes are built without a second validation (as messageOfRow does).
const toTurn = (r: TurnRow): Turn =>
  Turn.make({
    id: r.id,
    conversationId: r.conversationId,
    status: r.status,
    attempts: r.attempts,
    owner: r.ownerEpoch !== null && r.executorId !== null ? TurnOwner.make({ epoch: r.ownerEpoch, executor: r.executorId }, true) : null,
    notBefore: r.notBefore,
    error: r.error,
    createdAt: r.createdAt,
    updatedAt: r.updatedAt
  }, true)

const turnColumns = `id, conversation_id AS "conversationId", status, attempts, owner_epoch AS "ownerEpoch", executor_id AS "executorId",
  not_before AS "notBefore", error, created_at AS "createdAt", updated_at AS "updatedAt"`

const activeSql = `SELECT ${turnColumns} FROM turns WHERE conversation_id = ? AND status IN ('queued', 'running', 'interrupted')`
const resumeSql = `UPDATE turns SET status = 'running', attempts = attempts + 1, owner_epoch = ?, executor_id = ?, updated_at = ?
  WHERE id = ? RETURNING ${turnColumns}`
const claimPendingSql = `INSERT INTO delivery_claims (message_id, turn_id)
  SELECT m.id, ? FROM messages m
  WHERE m.conversation_id = ? AND m.direction = 'in' AND m.handled_by IS NULL
    AND NOT EXISTS (SELECT 1 FROM delivery_claims c WHERE c.message_id = m.id)`
const claimedSql = `SELECT ${messageColumns} FROM delivery_claims c JOIN messages m ON m.id = c.message_id WHERE c.turn_id = ? ORDER BY m.id`
const pendingSql = `SELECT ${messageColumns} FROM messages m WHERE m.conversation_id = ? AND m.direction = 'in'
  AND m.handled_by IS NULL AND NOT EXISTS (SELECT 1 FROM delivery_claims c WHERE c.message_id = m.id) ORDER BY m.id`
const conversationSql = `SELECT ${conversationColumns} FROM conversations WHERE id = ?`
// Acquires of one conversation exclude each other: on Postgres (several connections, several
// hosts) the conversation's row is locked first, and a conversation another transaction is
// acquiring is skipped as Busy (no wait, no retry); NO KEY UPDATE, so ingest's foreign-key checks
// on the row never wait for it. On SQLite the transaction already holds the one write lock.
const lockConversationSql = "SELECT id FROM conversations WHERE id = ? FOR NO KEY UPDATE SKIP LOCKED"
const createSql = `INSERT INTO turns (conversation_id, status, attempts, owner_epoch, executor_id, not_before, created_at, updated_at)
  VALUES (?, 'running', 1, ?, ?, 0, ?, ?) RETURNING ${turnColumns}`
const claimSql = "INSERT INTO delivery_claims (message_id, turn_id) VALUES (?, ?)"
const finishSql = "UPDATE turns SET status = ?, error = ?, updated_at = ? WHERE id = ? AND status = 'running' AND owner_epoch = ? RETURNING id"
// The scheduled runs whose messages the turn answered end with it, in the same transaction: a
// kill -9 can never leave a run queued behind a finished turn (docs/schedules.md).
const settleRunsSql = `UPDATE task_runs SET
    outcome = CASE WHEN ? = 'failed' THEN 'failed'
      WHEN EXISTS (SELECT 1 FROM deliveries d WHERE d.turn_id = ? AND d.kind = 'reply') THEN 'delivered' ELSE 'quiet' END,
    turn_id = ?, finished_at = ?, reason = CASE WHEN ? = 'failed' THEN ? END
  WHERE message_id IN (SELECT message_id FROM delivery_claims WHERE turn_id = ?) AND outcome = 'queued'`

/** What `acquire` found for a conversation. */
export type Acquired = Data.TaggedEnum<{
  /**
   * A turn is now running for this owner, holding claims on these messages; read in the same
   * transaction with its conversation, so the turn needs no other read to start.
   */
  Started: {
    readonly turn: Turn
    readonly messageIds: ReadonlyArray<MessageId>
    readonly messages: ReadonlyArray<Message>
    readonly conversation: Option.Option<Conversation>
  }
  /** Another turn of the conversation is running. */
  Busy: {}
  /** A retry is due at `at` (epoch millis). */
  Later: { readonly at: number }
  /** Nothing to do. */
  Idle: {}
}>
export const Acquired = Data.taggedEnum<Acquired>()

export interface AcquireRequest {
  readonly conversationId: ConversationId
  readonly owner: TurnOwner
}

export interface OrphanRelease {
  /** Turns whose executor is gone: now interrupted, their claims released. */
  readonly interrupted: ReadonlyArray<TurnId>
  readonly releasedClaims: number
  /** Turns whose executor is alive: their claims are kept and their owner moves to this epoch. */
  readonly survivors: ReadonlyArray<Turn>
}

export declare namespace TurnStore {
  /** Turns and delivery claims. Every transition is fenced on the owner epoch. */
  export interface Service {
    /**
     * In one transaction: start (or resume) the conversation's turn for `owner` and claim every
     * pending inbound message of the conversation. At most one active turn per conversation.
     */
    readonly acquire: (conversationId: ConversationId, owner: TurnOwner, now: number) => Effect.Effect<Acquired>
    /** `acquire` for several conversations in ONE transaction: the dispatcher's batch (one answer per request, in order). */
    readonly acquireMany: (requests: ReadonlyArray<AcquireRequest>, now: number) => Effect.Effect<ReadonlyArray<Acquired>>
    /**
     * running → completed: its claimed messages become handled by it, claims are dropped, and the
     * scheduled runs of those messages end `delivered` (it recorded a reply) or `quiet`.
     */
    readonly complete: (turnId: TurnId, epoch: HostEpoch) => Effect.Effect<boolean>
    /**
     * running → blocked, final as completed (handled messages, claims dropped, scheduled runs
     * settled, no retry): it ended waiting on a human in `state` (`needs_input`), kept in `error`.
     */
    readonly block: (turnId: TurnId, epoch: HostEpoch, state: string) => Effect.Effect<boolean>
    /** running → queued with a not-before time; claims stay with the turn. */
    readonly retryLater: (turnId: TurnId, epoch: HostEpoch, error: string, notBefore: number) => Effect.Effect<boolean>
    /** running → failed for good: its messages count as handled (by a failed turn), claims are dropped, their scheduled runs end `failed`. */
    readonly fail: (turnId: TurnId, epoch: HostEpoch, error: string) => Effect.Effect<boolean>
    /** Moves a surviving turn to this epoch (and optionally a new executor). */
    readonly adopt: (turnId: TurnId, owner: TurnOwner) => Effect.Effect<boolean>
    /**
     * Recovery part 1: running turns of earlier epochs whose executor `isAlive` denies become
     * interrupted and release their claims; survivors keep theirs and move to `epoch`. With
     * `connection`, only the turns of that connection's conversations (a cluster host taking over
     * one connection: src/cluster).
     */
    readonly releaseOrphans: <E, R>(
      epoch: HostEpoch,
      isAlive: (executor: ExecutorId) => Effect.Effect<boolean, E, R>,
      connection?: string
    ) => Effect.Effect<OrphanRelease, E, R>
    readonly get: (turnId: TurnId) => Effect.Effect<Option.Option<Turn>>
    readonly claimsOf: (turnId: TurnId) => Effect.Effect<ReadonlyArray<MessageId>>
    /** Conversations with dispatchable work: pending messages, or a queued/interrupted turn. */
    readonly conversationsWithWork: Effect.Effect<ReadonlyArray<ConversationId>>
    readonly recent: (conversationId: ConversationId, limit: number) => Effect.Effect<ReadonlyArray<Turn>>
    readonly countByStatus: Effect.Effect<Record<string, number>>
    /** Conversations whose latest turn ended blocked (waiting on a human), newest first. */
    readonly latestBlocked: (limit: number) => Effect.Effect<ReadonlyArray<Turn>>
  }
}

export class TurnStore extends Context.Tag("pynchy/TurnStore")<TurnStore, TurnStore.Service>() {
  static readonly make = Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const findTurn = SqlSchema.findOne({
      Request: TurnId,
      Result: TurnRow,
      execute: (id) => sql`SELECT ${sql.literal(turnColumns)} FROM turns WHERE id = ${id}`
    })
    const claimIds = (turnId: TurnId) =>
      sql<{ id: number }>`SELECT message_id AS id FROM delivery_claims WHERE turn_id = ${turnId} ORDER BY message_id`.pipe(
        Effect.map((rows) => rows.map((r) => MessageId.make(r.id)))
      )
    // acquire and finish run on every turn: one transaction program each (see Transactions).
    const { grouped, transaction } = yield* Tx.Transactions
    const turnOf = Schema.decodeUnknownSync(TurnRow)

    const started = function* (turn: Turn, rows: ReadonlyArray<unknown>): Tx.Program<Acquired> {
      const messages = rows.map(messageOfRow)
      const conversation = yield* Tx.get(conversationSql, turn.conversationId)
      return Acquired.Started({
        turn,
        messageIds: messages.map((m) => m.id),
        messages,
        conversation: conversation === undefined ? Option.none() : Option.some(conversationOfRow(conversation))
      })
    }

    const acquireOne = function* (conversationId: ConversationId, owner: TurnOwner, now: number): Tx.Program<Acquired> {
      if (!(yield* Tx.lock(lockConversationSql, conversationId))) {
        const exists = yield* Tx.get(conversationSql, conversationId)
        return exists === undefined ? Acquired.Idle() : Acquired.Busy()
      }
      const active = yield* Tx.get(activeSql, conversationId)
      if (active !== undefined) {
        const t = turnOf(active)
        if (t.status === "running") return Acquired.Busy()
        if (t.notBefore > now) return Acquired.Later({ at: t.notBefore })
        const resumed = turnOf(yield* Tx.get(resumeSql, owner.epoch, owner.executor, now, t.id))
        yield* Tx.run(claimPendingSql, t.id, conversationId)
        const claimed = yield* Tx.all(claimedSql, t.id)
        if (claimed.length === 0) {
          // A resumed turn whose messages were all taken elsewhere has nothing left to answer.
          yield* Tx.run("UPDATE turns SET status = 'completed', updated_at = ? WHERE id = ?", now, t.id)
          return Acquired.Idle()
        }
        return yield* started(toTurn(resumed), claimed)
      }
      // A new turn: the pending messages, the turn, their claims.
      const pending = yield* Tx.all<{ id: number }>(pendingSql, conversationId)
      if (pending.length === 0) return Acquired.Idle()
      const created = turnOf(yield* Tx.get(createSql, conversationId, owner.epoch, owner.executor, now, now))
      for (const p of pending) yield* Tx.run(claimSql, p.id, created.id)
      return yield* started(toTurn(created), pending)
    }

    const acquireMany = (requests: ReadonlyArray<AcquireRequest>, now: number) =>
      transaction(function* () {
        const results: Array<Acquired> = []
        for (const r of requests) results.push(yield* acquireOne(r.conversationId, r.owner, now))
        return results
      }).pipe(
        Effect.orDie,
        Effect.withSpan("TurnStore.acquire", { captureStackTrace: false, attributes: { conversations: requests.length } })
      )
    const acquire = (conversationId: ConversationId, owner: TurnOwner, now: number) =>
      Effect.map(acquireMany([{ conversationId, owner }], now), (results) => results[0]!)

    const finish = (turnId: TurnId, epoch: HostEpoch, status: "completed" | "blocked" | "failed", error: string | null) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        // Turns that end together (a restart's backlog, a burst) share a commit.
        grouped(function* () {
          if ((yield* Tx.run(finishSql, status, error, now, turnId, epoch)) === 0) return false
          yield* Tx.run(settleRunsSql, status, turnId, turnId, now, status, error, turnId)
          yield* Tx.run("UPDATE messages SET handled_by = ? WHERE id IN (SELECT message_id FROM delivery_claims WHERE turn_id = ?)", turnId, turnId)
          yield* Tx.run("DELETE FROM delivery_claims WHERE turn_id = ?", turnId)
          return true
        })).pipe(Effect.orDie)

    const releaseOrphans = <E, R>(epoch: HostEpoch, isAlive: (executor: ExecutorId) => Effect.Effect<boolean, E, R>, connection?: string) =>
      Effect.gen(function* () {
        const ofConnection = connection === undefined ? sql`` : sql` AND conversation_id IN (SELECT id FROM conversations WHERE connection = ${connection})`
        const running = yield* SqlSchema.findAll({
          Request: HostEpoch,
          Result: TurnRow,
          execute: (e) => sql`SELECT ${sql.literal(turnColumns)} FROM turns WHERE status = 'running' AND (owner_epoch IS NULL OR owner_epoch != ${e})${ofConnection}`
        })(epoch).pipe(Effect.orDie)
        // Liveness is asked outside any transaction: it may talk to a container runtime or a session.
        const verdicts = yield* Effect.forEach(running, (t) =>
          t.executorId === null ? Effect.succeed([t, false] as const) : Effect.map(isAlive(t.executorId), (alive) => [t, alive] as const),
          { concurrency: 8 }
        )
        const dead = verdicts.filter(([, alive]) => !alive).map(([t]) => t.id)
        const alive = verdicts.filter(([, a]) => a).map(([t]) => t)
        const now = yield* Clock.currentTimeMillis
        return yield* sql.withTransaction(
          Effect.gen(function* () {
            const released = yield* sql<{ n: number }>`DELETE FROM delivery_claims WHERE ${sql.in("turn_id", dead)} RETURNING 1 AS n`
            yield* sql`UPDATE turns SET status = 'interrupted', owner_epoch = NULL, executor_id = NULL, updated_at = ${now}
              WHERE ${sql.in("id", dead)} AND status = 'running'`
            yield* sql`UPDATE turns SET owner_epoch = ${epoch}, updated_at = ${now}
              WHERE ${sql.in("id", alive.map((t) => t.id))} AND status = 'running'`
            const survivors = alive.map((t) => toTurn({ ...t, ownerEpoch: epoch }))
            return { interrupted: dead, releasedClaims: released.length, survivors } satisfies OrphanRelease
          })
        ).pipe(Effect.orDie)
      })

    return TurnStore.of({
      acquire,
      acquireMany,
      complete: (turnId, epoch) => finish(turnId, epoch, "completed", null),
      block: (turnId, epoch, state) => finish(turnId, epoch, "blocked", state),
      fail: (turnId, epoch, error) => finish(turnId, epoch, "failed", error),
      retryLater: (turnId, epoch, error, notBefore) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => sql`UPDATE turns SET status = 'queued', owner_epoch = NULL, executor_id = NULL, error = ${error}, not_before = ${notBefore}, updated_at = ${now}
          WHERE id = ${turnId} AND status = 'running' AND owner_epoch = ${epoch} RETURNING id`).pipe(Effect.map((r) => r.length > 0), Effect.orDie),
      adopt: (turnId, owner) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => sql`UPDATE turns SET owner_epoch = ${owner.epoch}, executor_id = ${owner.executor}, updated_at = ${now}
          WHERE id = ${turnId} AND status = 'running' RETURNING id`).pipe(Effect.map((r) => r.length > 0), Effect.orDie),
      releaseOrphans,
      get: (turnId) => findTurn(turnId).pipe(Effect.map(Option.map(toTurn)), Effect.orDie),
      claimsOf: (turnId) => claimIds(turnId).pipe(Effect.orDie),
      conversationsWithWork: sql<{ id: string }>`
          SELECT DISTINCT m.conversation_id AS id FROM messages m
          WHERE m.direction = 'in' AND m.handled_by IS NULL AND NOT EXISTS (SELECT 1 FROM delivery_claims c WHERE c.message_id = m.id)
          UNION SELECT conversation_id AS id FROM turns WHERE status IN ('queued', 'interrupted')`.pipe(
        Effect.map((rows) => rows.map((r) => ConversationId.make(r.id))),
        Effect.orDie
      ),
      recent: (conversationId, limit) =>
        SqlSchema.findAll({
          Request: Schema.Void,
          Result: TurnRow,
          execute: () => sql`SELECT ${sql.literal(turnColumns)} FROM turns WHERE conversation_id = ${conversationId} ORDER BY id DESC LIMIT ${limit}`
        })(undefined).pipe(Effect.map((rows) => rows.map(toTurn)), Effect.orDie),
      // Every count from an index, in time that does not grow with history: the active statuses
      // (turns_status), blocked and failed (their partial indexes); completed is the rest of the
      // turns, a table rows are only appended to (max - min id, one seek each).
      countByStatus: sql<{ status: string; n: number }>`
          SELECT status, COUNT(*) AS n FROM turns WHERE status IN ('queued', 'running', 'interrupted') GROUP BY status
          UNION ALL SELECT 'blocked', COUNT(*) FROM turns WHERE status = 'blocked'
          UNION ALL SELECT 'failed', COUNT(*) FROM turns WHERE status = 'failed'
          UNION ALL SELECT 'all', COALESCE((SELECT max(id) FROM turns) - (SELECT min(id) FROM turns) + 1, 0)`.pipe(
        Effect.map((rows) => {
          const counts: Record<string, number> = Object.fromEntries(rows.filter((r) => r.n > 0).map((r) => [r.status, r.n]))
          const { all = 0, ...rest } = counts
          const completed = all - Object.values(rest).reduce((a, b) => a + b, 0)
          return completed > 0 ? { ...rest, completed } : rest
        }),
        Effect.orDie
      ),
      latestBlocked: (limit) =>
        SqlSchema.findAll({
          Request: Schema.Void,
          Result: TurnRow,
          // From the blocked turns' partial index (0013), each checked against its conversation's
          // latest; `+id` keeps the planner from walking every turn newest first to find them.
          execute: () => sql`SELECT ${sql.literal(turnColumns)} FROM turns t WHERE status = 'blocked'
            AND id = (SELECT MAX(id) FROM turns WHERE conversation_id = t.conversation_id) ORDER BY +id DESC LIMIT ${limit}`
        })(undefined).pipe(Effect.map((rows) => rows.map(toTurn)), Effect.orDie)
    })
  })

  static readonly layer = Layer.effect(TurnStore, TurnStore.make)
}
