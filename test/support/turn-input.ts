/** A running turn's input as the turn runner hands it to an executor, for tests and benches that drive an executor or the context service directly. */
import { Effect } from "effect"
import { ConversationId, type ExecutorId, MessageId, TurnId } from "../../src/domain/ids.js"
import { Message } from "../../src/domain/message.js"
import { Turn } from "../../src/domain/turn.js"
import { Conversation, type Workspace } from "../../src/domain/workspace.js"
import type { TurnInput } from "../../src/pipeline/AgentExecutor.js"

export interface TurnInputOptions {
  readonly executor: ExecutorId
  readonly workspace: Workspace
  /** The turn's new messages (ids from 1 when only texts are given). */
  readonly messages: ReadonlyArray<string | { readonly id: number; readonly text: string; readonly sender: string }>
  readonly turnId?: number
  readonly conversationId?: string
  /** Replies, and notices as `(notice) <text>`, are pushed here. */
  readonly replies?: Array<string>
}

export const turnInput = (o: TurnInputOptions): TurnInput => {
  const conversationId = ConversationId.make(o.conversationId ?? "test:room")
  const [connection, place] = [conversationId.split(":")[0]!, conversationId.split(":").slice(1).join(":")]
  return {
    turn: Turn.make({ id: TurnId.make(o.turnId ?? 1), conversationId, status: "running", attempts: 1, owner: null, notBefore: 0, error: null, createdAt: 0, updatedAt: 0 }),
    executor: o.executor,
    conversation: Conversation.make({ id: conversationId, connection: connection as any, place, workspace: o.workspace.id, createdAt: 0 }),
    workspace: o.workspace,
    messages: o.messages.map((m, i) => {
      const { id, text, sender } = typeof m === "string" ? { id: i + 1, text: m, sender: "u" } : m
      return Message.make({ id: MessageId.make(id), conversationId, direction: "in", sender, text, metadata: {}, createdAt: 0, handledBy: null })
    }),
    reply: (text) => Effect.sync(() => void o.replies?.push(text)),
    notice: (_key, text) => Effect.sync(() => void o.replies?.push(`(notice) ${text}`)),
    progress: () => Effect.void
  }
}
