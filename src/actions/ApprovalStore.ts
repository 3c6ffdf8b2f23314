import { SqlClient, SqlSchema } from "@effect/sql"
import { Context, Effect, Layer, Schema } from "effect"
import type { Option } from "effect"
import { ConversationId, TurnId } from "../domain/ids.js"

export const ApprovalStatus = Schema.Literal("pending", "approved", "denied", "expired", "consumed")
export type ApprovalStatus = typeof ApprovalStatus.Type

/** One approval request: what was asked (action + input digest, never the input) and what became of it. */
export const Approval = Schema.Struct({
  /** The short code the human types: 6 of [a-z0-9]. */
  id: Schema.String,
  conversationId: ConversationId,
  turnId: Schema.NullOr(TurnId),
  /** The turn's attempt count when asked; null without a turn (and for rows from before 0003). */
  attempt: Schema.NullOr(Schema.Int),
  action: Schema.String,
  inputDigest: Schema.String,
  status: ApprovalStatus,
  createdAt: Schema.Number,
  expiresAt: Schema.Number,
  decidedAt: Schema.NullOr(Schema.Number),
  decidedBy: Schema.NullOr(Schema.String),
  consumedAt: Schema.NullOr(Schema.Number)
})
export type Approval = typeof Approval.Type

const columns = `id, conversation_id AS "conversationId", turn_id AS "turnId", attempt, action, input_digest AS "inputDigest", status,
  created_at AS "createdAt", expires_at AS "expiresAt", decided_at AS "decidedAt", decided_by AS "decidedBy", consumed_at AS "consumedAt"`

// The attempt a row must carry to belong to its turn's current run: a retry (attempts + 1) of the
// turn no longer matches an earlier attempt's rows.
const CURRENT_ATTEMPT = `(SELECT t.attempts FROM turns t WHERE t.id = approvals.turn_id)`

export interface NewApproval {
  readonly id: string
  readonly conversationId: ConversationId
  readonly turnId: TurnId | null
  readonly action: string
  readonly inputDigest: string
  readonly createdAt: number
  readonly expiresAt: number
}

export declare namespace ApprovalStore {
  /**
   * Approval rows. Status moves pending → approved | denied | expired, and approved → consumed,
   * each once. A row is bound to its turn's attempt at insert.
   */
  export interface Service {
    /**
     * Inserts a pending row bound to the turn's current attempt; none when its code is taken or
     * an open (pending or approved) request of this attempt, action and digest exists.
     */
    readonly insert: (approval: NewApproval) => Effect.Effect<Option.Option<Approval>>
    readonly get: (id: string) => Effect.Effect<Option.Option<Approval>>
    /** The newest requests first (the Control UI's list), `limit` of them. */
    readonly recent: (limit: number) => Effect.Effect<ReadonlyArray<Approval>>
    /**
     * The latest request of the turn's current attempt for an action with this input digest,
     * whatever its status; requests of earlier attempts are never found.
     */
    readonly find: (turnId: TurnId, action: string, inputDigest: string) => Effect.Effect<Option.Option<Approval>>
    /**
     * pending → approved | denied, only for a row of this conversation that has not expired by
     * `now`; the decided row, or none when nothing matched.
     */
    readonly decide: (
      id: string,
      conversationId: ConversationId,
      status: "approved" | "denied",
      decidedBy: string,
      now: number
    ) => Effect.Effect<Option.Option<Approval>>
    /** pending → expired; returns the row as it ends (a decision that came first stands). */
    readonly expire: (id: string, now: number) => Effect.Effect<Option.Option<Approval>>
    /**
     * approved → consumed in one statement (a compare-and-set), only while the row's turn is
     * still on the attempt that asked. True for exactly one caller per approval.
     */
    readonly consume: (id: string, now: number) => Effect.Effect<boolean>
  }
}

export class ApprovalStore extends Context.Tag("pynchy/ApprovalStore")<ApprovalStore, ApprovalStore.Service>() {
  static readonly make = Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const byId = SqlSchema.findOne({
      Request: Schema.String,
      Result: Approval,
      execute: (id) => sql`SELECT ${sql.literal(columns)} FROM approvals WHERE id = ${id}`
    })
    const newest = SqlSchema.findAll({
      Request: Schema.Int,
      Result: Approval,
      execute: (limit) => sql`SELECT ${sql.literal(columns)} FROM approvals ORDER BY created_at DESC, rowid DESC LIMIT ${limit}`
    })
    const byRequest = SqlSchema.findOne({
      Request: Schema.Struct({ turnId: TurnId, action: Schema.String, inputDigest: Schema.String }),
      Result: Approval,
      execute: ({ action, inputDigest, turnId }) =>
        sql`SELECT ${sql.literal(columns)} FROM approvals
          WHERE turn_id = ${turnId} AND action = ${action} AND input_digest = ${inputDigest} AND attempt = ${sql.literal(CURRENT_ATTEMPT)}
          ORDER BY rowid DESC LIMIT 1`
    })
    const insertRow = SqlSchema.findOne({
      Request: Schema.Struct({
        id: Schema.String,
        conversationId: ConversationId,
        turnId: Schema.NullOr(TurnId),
        action: Schema.String,
        inputDigest: Schema.String,
        createdAt: Schema.Number,
        expiresAt: Schema.Number
      }),
      Result: Approval,
      execute: (a) =>
        sql`INSERT INTO approvals (id, conversation_id, turn_id, attempt, action, input_digest, status, created_at, expires_at)
          VALUES (${a.id}, ${a.conversationId}, ${a.turnId}, (SELECT t.attempts FROM turns t WHERE t.id = ${a.turnId}), ${a.action},
            ${a.inputDigest}, 'pending', ${a.createdAt}, ${a.expiresAt})
          ON CONFLICT DO NOTHING RETURNING ${sql.literal(columns)}`
    })
    const decideRow = SqlSchema.findOne({
      Request: Schema.Struct({
        id: Schema.String,
        conversationId: ConversationId,
        status: Schema.Literal("approved", "denied"),
        decidedBy: Schema.String,
        now: Schema.Number
      }),
      Result: Approval,
      execute: ({ conversationId, decidedBy, id, now, status }) =>
        sql`UPDATE approvals SET status = ${status}, decided_at = ${now}, decided_by = ${decidedBy}
          WHERE id = ${id} AND conversation_id = ${conversationId} AND status = 'pending' AND expires_at > ${now}
          RETURNING ${sql.literal(columns)}`
    })

    return ApprovalStore.of({
      insert: (a) => Effect.orDie(insertRow(a)),
      get: (id) => Effect.orDie(byId(id)),
      recent: (limit) => Effect.orDie(newest(limit)),
      find: (turnId, action, inputDigest) => Effect.orDie(byRequest({ turnId, action, inputDigest })),
      decide: (id, conversationId, status, decidedBy, now) => Effect.orDie(decideRow({ id, conversationId, status, decidedBy, now })),
      expire: (id, now) =>
        sql`UPDATE approvals SET status = 'expired', decided_at = ${now} WHERE id = ${id} AND status = 'pending'`.pipe(
          Effect.zipRight(byId(id)),
          Effect.orDie
        ),
      consume: (id, now) =>
        sql<{ id: string }>`UPDATE approvals SET status = 'consumed', consumed_at = ${now}
          WHERE id = ${id} AND status = 'approved' AND (turn_id IS NULL OR attempt = ${sql.literal(CURRENT_ATTEMPT)})
          RETURNING id`.pipe(Effect.map((rows) => rows.length === 1), Effect.orDie)
    })
  })

  static readonly layer = Layer.effect(ApprovalStore, ApprovalStore.make)
}
