/**
 * The trace of one message for the Control UI: what happened to it, step by step, and a verdict
 * in plain words. This is the UI's one source of traces: it reads the database (the message, the
 * turn that answered it, that turn's deliveries and approvals, the gateway calls of its
 * conversation while the turn ran) so a stopped host's records read the same.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import type { Approval } from "../actions/ApprovalStore.js"
import { DeliveryStore } from "../db/DeliveryStore.js"
import { MessageStore } from "../db/MessageStore.js"
import { TurnStore } from "../db/TurnStore.js"
import { MessageId, TurnId } from "../domain/ids.js"
import type { Message } from "../domain/message.js"

export interface TraceStep {
  readonly at: number
  readonly what: string
  readonly detail: string
  readonly outcome: "ok" | "waiting" | "failed"
}

export interface MessageTrace {
  readonly message: Message
  readonly steps: ReadonlyArray<TraceStep>
  /** One line: what became of the message. */
  readonly verdict: string
}

interface Usage {
  readonly at: number
  readonly model: string
  readonly deployment: string
  readonly status: number
  readonly outcome: string
  readonly totalTokens: number
  readonly durationMs: number
}

export const traceOfMessage = (id: number) =>
  Effect.gen(function* () {
    const messages = yield* MessageStore
    const turns = yield* TurnStore
    const deliveries = yield* DeliveryStore
    const sql = yield* SqlClient.SqlClient
    const found = yield* messages.get(MessageId.make(id))
    if (Option.isNone(found)) return Option.none<MessageTrace>()
    const message = found.value
    const steps: Array<TraceStep> = [{ at: message.createdAt, what: "received", detail: `from ${message.sender} in ${message.conversationId}`, outcome: "ok" }]
    const claim = yield* sql<{ turnId: number }>`SELECT turn_id AS turnId FROM delivery_claims WHERE message_id = ${id}`.pipe(Effect.orDie)
    const turnId = message.handledBy ?? claim[0]?.turnId ?? null
    if (turnId === null) {
      return Option.some({ message, steps, verdict: "waiting for a turn: no turn has claimed it yet (queued, or its conversation's current turn must end first)" })
    }
    const turn = Option.getOrThrow(yield* turns.get(TurnId.make(turnId)))
    steps.push({
      at: turn.createdAt,
      what: `turn ${turn.id}`,
      detail: `${turn.status}, ${turn.attempts} attempt(s)${turn.error !== null ? `, ${turn.error}` : ""}`,
      outcome: turn.status === "failed" ? "failed" : turn.status === "completed" ? "ok" : "waiting"
    })
    const usage = yield* sql<{ payload: string }>`SELECT payload FROM events
      WHERE type = 'gateway.usage' AND at >= ${turn.createdAt} AND at <= ${turn.updatedAt + 1_000}
        AND json_extract(payload, '$.conversationId') = ${message.conversationId} ORDER BY id`.pipe(Effect.orDie)
    for (const { payload } of usage) {
      const u = JSON.parse(payload) as Usage
      steps.push({
        at: u.at,
        what: "gateway call",
        detail: `${u.model} via ${u.deployment}: ${u.status} ${u.outcome}, ${u.totalTokens} tokens, ${u.durationMs} ms`,
        outcome: u.outcome === "ok" ? "ok" : "failed"
      })
    }
    const approvals = yield* sql<Pick<Approval, "id" | "action" | "status" | "createdAt" | "decidedBy">>`SELECT id, action, status, created_at AS createdAt,
        decided_by AS decidedBy FROM approvals WHERE turn_id = ${turn.id} ORDER BY created_at`.pipe(Effect.orDie)
    for (const a of approvals) {
      steps.push({
        at: a.createdAt,
        what: `approval ${a.id}`,
        detail: `${a.action}: ${a.status}${a.decidedBy !== null ? ` by ${a.decidedBy}` : ""}`,
        outcome: a.status === "pending" ? "waiting" : a.status === "denied" || a.status === "expired" ? "failed" : "ok"
      })
    }
    const sent = (yield* deliveries.byConversation(message.conversationId, 500)).filter((d) => d.turnId === turn.id)
    for (const d of sent) {
      steps.push({
        at: d.createdAt,
        what: `${d.kind} ${d.id}`,
        detail: `${d.status}${d.error !== null ? ` (${d.error})` : ""}: ${d.text.length > 80 ? `${d.text.slice(0, 80)}…` : d.text}`,
        outcome: d.status === "sent" ? "ok" : d.status === "pending" ? "waiting" : "failed"
      })
    }
    steps.sort((a, b) => a.at - b.at)
    return Option.some({ message, steps, verdict: verdictOf(turn.status, turn.error, approvals, sent) })
  })

const verdictOf = (
  status: string,
  error: string | null,
  approvals: ReadonlyArray<{ readonly id: string; readonly status: string }>,
  sent: ReadonlyArray<{ readonly status: string; readonly kind: string }>
): string => {
  const waiting = approvals.find((a) => a.status === "pending")
  if (waiting !== undefined) return `waiting for an approval: approve or deny ${waiting.id} (Approvals page, or reply \`approve ${waiting.id}\`)`
  if (status === "failed") return `the turn failed${error !== null ? ` (${error})` : ""}: the conversation was told; send the message again once the cause is fixed`
  if (status === "queued" || status === "running" || status === "interrupted") return `the turn is ${status}${error !== null ? ` (last error: ${error})` : ""}`
  if (sent.some((d) => d.status === "unknown")) return "a reply's delivery is unknown (the host stopped while sending it)"
  if (sent.some((d) => d.status === "failed")) return "a reply could not be delivered"
  if (sent.some((d) => d.status === "pending")) return "answered; a reply is still being delivered"
  if (sent.some((d) => d.kind === "reply")) return "answered: every reply was delivered"
  return "the turn completed without a reply"
}
