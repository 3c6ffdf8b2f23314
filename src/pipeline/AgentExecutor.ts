import { Context, Data, Effect, Schema } from "effect"
import type { ConversationId, ExecutorId } from "../domain/ids.js"
import type { Message } from "../domain/message.js"
import type { Turn } from "../domain/turn.js"
import type { Conversation, Workspace } from "../domain/workspace.js"

/** A turn's run failed; `retryable` decides between a later attempt and a final failure. */
export class TurnFailed extends Schema.TaggedError<TurnFailed>()("TurnFailed", {
  code: Schema.String,
  reason: Schema.String,
  retryable: Schema.Boolean
}) {
  override get message() {
    return `turn failed (${this.code}): ${this.reason}`
  }
}

/**
 * A run that ended without an answer because its work waits on a human (a delegated session
 * asked a question or for a permission). The user was told; the turn ends blocked, not failed.
 */
export class TurnBlocked extends Data.TaggedClass("TurnBlocked")<{ readonly state: string }> {}

/** Everything an executor gets for one turn. */
export interface TurnInput {
  readonly turn: Turn
  readonly executor: ExecutorId
  readonly conversation: Conversation
  readonly workspace: Workspace
  /** The claimed inbound messages, oldest first. */
  readonly messages: ReadonlyArray<Message>
  /**
   * Records a reply durably (a delivery row, keyed `t<turn>:<n>` by its position in the turn)
   * and hands it to the channel. A rerun of the same turn that replies in the same order finds
   * its earlier replies recorded and sends nothing twice.
   */
  readonly reply: (text: string) => Effect.Effect<void>
  /** Records a host notice to the conversation (not the agent's words), once per `key` in this turn. */
  readonly notice: (key: string, text: string) => Effect.Effect<void>
  /**
   * Shows progress on the conversation's channel (streamed text of the next reply). Best-effort:
   * never recorded, never blocks or fails the turn, dropped when the channel is slow. The reply
   * still goes through `reply`, which alone is delivered.
   */
  readonly progress: (event: TurnProgress) => Effect.Effect<void>
  /**
   * Tokens the turn may still spend through the gateway, when something caps it (a scheduled
   * task's `dailyTokens`): the turn's gateway token carries it as its budget.
   */
  readonly tokenBudget?: number
}

/** What an executor reports while a turn runs: text of the reply it is writing. */
export type TurnProgress = { readonly type: "delta"; readonly text: string }

export declare namespace AgentExecutor {
  /** Runs one turn: a sandboxed agent, a delegated session, or a scripted stand-in. */
  export interface Service {
    /**
     * Picks the executor id for a run of this conversation before it starts, so ownership is
     * recorded first (a sandbox id, or `attachment:<id>` for a delegated conversation).
     */
    readonly allocate: (conversationId: ConversationId) => Effect.Effect<ExecutorId>
    readonly execute: (input: TurnInput) => Effect.Effect<void | TurnBlocked, TurnFailed>
    /**
     * Takes over a turn whose executor survived a restart and waits for its end. Executors
     * that cannot survive a restart never see this (their liveness says dead).
     */
    readonly adopt: (input: TurnInput) => Effect.Effect<void | TurnBlocked, TurnFailed>
  }
}
export class AgentExecutor extends Context.Tag("pynchy/AgentExecutor")<AgentExecutor, AgentExecutor.Service>() {}

export declare namespace ExecutorLiveness {
  /** Whether the executor of a turn from an earlier host epoch is still alive (recovery asks). */
  export interface Service {
    readonly isAlive: (executor: ExecutorId) => Effect.Effect<boolean>
  }
}
export class ExecutorLiveness extends Context.Tag("pynchy/ExecutorLiveness")<ExecutorLiveness, ExecutorLiveness.Service>() {}
