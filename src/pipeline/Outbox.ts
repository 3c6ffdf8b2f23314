import { SqlClient } from "@effect/sql"
import { Context, Duration, Effect, Layer, Option, Schedule, Schema, Stream } from "effect"
import { DeliveryStore } from "../db/DeliveryStore.js"
import { MessageStore } from "../db/MessageStore.js"
import type { Delivery, DeliveryKind } from "../domain/delivery.js"
import type { ConversationId, TurnId } from "../domain/ids.js"
import { EventBus } from "../events/EventBus.js"
import type { Conversation } from "../domain/workspace.js"
import type { NativeChannel, OutboundAudio, OutboundFile } from "../contracts/channel.js"
import { Channels } from "./Channels.js"
import { keyedRunner } from "./keyed.js"
import { ReplyAudio } from "./ReplyAudio.js"
import { continuing, currentTraceparent } from "../telemetry/trace-context.js"

/** The channel call rejected: nothing was delivered, so it may be tried again. */
class SendRejected extends Schema.TaggedError<SendRejected>()("SendRejected", { reason: Schema.String }) {}
/** The channel call did not answer in time: it may or may not have been delivered. */
class SendTimedOut extends Schema.TaggedError<SendTimedOut>()("SendTimedOut", {}) {}
/** The channel said the platform may or may not have it (`SendOutcomeUnknown`): never resent. */
class SendAmbiguous extends Schema.TaggedError<SendAmbiguous>()("SendAmbiguous", { reason: Schema.String }) {}

const SEND_TIMEOUT = Duration.seconds(30)
const SEND_RETRIES = Schedule.exponential(Duration.millis(200)).pipe(Schedule.intersect(Schedule.recurs(2)))

export interface OutgoingItem {
  readonly idempotencyKey: string
  readonly kind: DeliveryKind
  readonly text: string
}

export declare namespace Outbox {
  /**
   * Outbound deliveries: recorded before any channel call, sent in order per conversation,
   * resumed after a restart, each ending sent, failed or unknown.
   */
  export interface Service {
    /** Records deliveries (new keys only, with their outbound message rows) and wakes the sender. */
    readonly record: (conversationId: ConversationId, turnId: TurnId | null, items: ReadonlyArray<OutgoingItem>) => Effect.Effect<void>
    /** Wakes the sender of every conversation with pending deliveries (startup, channel bound). */
    readonly resumePending: (connection?: string) => Effect.Effect<number>
  }
}

export class Outbox extends Context.Tag("pynchy/Outbox")<Outbox, Outbox.Service>() {
  static readonly make = Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const deliveries = yield* DeliveryStore
    const messages = yield* MessageStore
    const channels = yield* Channels
    const bus = yield* EventBus
    const replyAudio = yield* ReplyAudio
    const scope = yield* Effect.scope
    const idsOf = (d: Delivery) => ({ deliveryId: d.id, idempotencyKey: d.idempotencyKey, conversationId: d.conversationId, turnId: d.turnId, kind: d.kind })

    const record: Outbox.Service["record"] = Effect.fn("Outbox.record")(function* (conversationId, turnId, items) {
      // The send continues the trace the delivery was recorded in (the turn's), after a restart too.
      const traceParent = yield* currentTraceparent
      const rows = yield* sql.withTransaction(
        Effect.gen(function* () {
          const rows = yield* deliveries.record(items.map((i) => ({ ...i, conversationId, turnId, traceParent })))
          for (const { delivery, created } of rows) {
            if (created) {
              yield* messages.appendOutbound({ conversationId, sender: "assistant", text: delivery.text, metadata: { delivery: delivery.idempotencyKey, kind: delivery.kind } })
            }
          }
          return rows
        })
      ).pipe(Effect.orDie)
      yield* bus.publishAll(rows.filter((r) => r.created).map((r) => ({ type: "delivery.recorded", ...idsOf(r.delivery) })))
      yield* sender.wake(conversationId)
    })

    /** The user hears about a reply that failed or may be lost; notices themselves beget none. */
    const noticeFor = (d: Delivery, status: "failed" | "unknown"): Effect.Effect<void> =>
      d.kind === "notice" ? Effect.void : record(d.conversationId, d.turnId, [{
        idempotencyKey: `${d.idempotencyKey}:${status}`,
        kind: "notice",
        text: status === "failed"
          ? "(A reply could not be delivered to this chat.)"
          : "(The assistant restarted while sending a reply; it may be missing here.)"
      }])

    const callChannel = (channel: NativeChannel, conversation: Conversation, d: Delivery, previousAttempts: number, audio: Option.Option<OutboundAudio>, files: ReadonlyArray<OutboundFile>) =>
      channel.send({
          idempotencyKey: d.idempotencyKey,
          conversationId: d.conversationId,
          connection: conversation.connection,
          place: conversation.place,
          kind: d.kind,
          text: d.text,
          previousAttempts,
          ...(Option.isSome(audio) ? { audio: audio.value } : {}),
          ...(files.length > 0 ? { files } : {})
        }).pipe(
        Effect.mapError((e) => e.outcomeUnknown ? new SendAmbiguous({ reason: e.reason }) : new SendRejected({ reason: e.reason })),
        Effect.timeoutFail({ duration: SEND_TIMEOUT, onTimeout: () => new SendTimedOut() })
      )

    const sendOne = (channel: NativeChannel, conversation: Conversation, d: Delivery) =>
      Effect.gen(function* () {
        // A voice workspace's reply, for a channel that carries audio: made (or read back) after the
        // record and before the attempt begins, so a crash while it is made leaves nothing ambiguous,
        // and a reader who sees the attempt begun (the HTTP API) sees the audio with it.
        const resendable = d.attempts === 0 || channel.idempotentResends
        const audio = channel.audio === undefined || !resendable ? Option.none() : yield* replyAudio.audioFor(d, conversation.workspace, channel.audio)
        // The files of a reply (the agent's outbox) were stored before the delivery was recorded.
        const files = channel.files !== true || d.kind !== "reply" ? [] : yield* deliveries.filesOf(d.idempotencyKey)
        const attempt = yield* deliveries.beginAttempt(d.id)
        if (attempt > 1 && !channel.idempotentResends) {
          // An earlier call may have reached the platform before the crash: resending could duplicate.
          const reason = "interrupted during an earlier send; the channel cannot resend idempotently"
          yield* deliveries.settle(d.id, "unknown", reason)
          yield* bus.publish({ type: "delivery.unknown", ...idsOf(d), attempt, reason })
          yield* Effect.logWarning("delivery outcome unknown").pipe(Effect.annotateLogs({ delivery: d.idempotencyKey, channel: channel.name }))
          return yield* noticeFor(d, "unknown")
        }
        const outcome = yield* callChannel(channel, conversation, d, attempt - 1, audio, files).pipe(
          Effect.retry({ schedule: SEND_RETRIES, while: (e) => e._tag === "SendRejected" || (e._tag === "SendTimedOut" && channel.idempotentResends) }),
          Effect.either
        )
        if (outcome._tag === "Right") {
          yield* deliveries.settle(d.id, "sent")
          yield* bus.publish({ type: "delivery.sent", ...idsOf(d), attempt })
          return
        }
        const status = outcome.left._tag === "SendAmbiguous" || (outcome.left._tag === "SendTimedOut" && !channel.idempotentResends) ? "unknown" : "failed"
        const reason = outcome.left._tag === "SendTimedOut" ? "channel did not answer in time" : outcome.left.reason
        yield* deliveries.settle(d.id, status, reason)
        yield* bus.publish({ type: status === "failed" ? "delivery.failed" : "delivery.unknown", ...idsOf(d), attempt, reason })
        yield* Effect.logWarning(`delivery ${status}`).pipe(Effect.annotateLogs({ delivery: d.idempotencyKey, channel: channel.name }))
        yield* noticeFor(d, status)
      }).pipe(Effect.withSpan("Outbox.send", {
        ...continuing([d.traceParent]),
        kind: "producer",
        attributes: { "pynchy.delivery.key": d.idempotencyKey, "pynchy.delivery.kind": d.kind, "pynchy.channel": channel.name },
        captureStackTrace: false
      }))

    const drain = (conversationId: ConversationId) =>
      Effect.gen(function* () {
        const conversation = yield* messages.conversation(conversationId)
        if (Option.isNone(conversation)) return
        const channel = channels.get(conversation.value.connection)
        // No channel yet (a runtime still starting): the rows wait, and binding one wakes them.
        if (channel === undefined) return
        for (const d of yield* deliveries.pendingOf(conversationId)) yield* sendOne(channel, conversation.value, d)
      }).pipe(Effect.withSpan("Outbox.drain"))

    const sender = keyedRunner(scope, drain)

    const resumePending = (connection?: string) =>
      Effect.gen(function* () {
        const pending = yield* deliveries.conversationsWithPending(connection)
        yield* Effect.forEach(pending, sender.wake, { discard: true })
        return pending.length
      })

    yield* channels.bound.pipe(Stream.runForEach((name) => resumePending(name)), Effect.forkScoped)

    return Outbox.of({ record, resumePending })
  })

  static readonly layer = Layer.scoped(Outbox, Outbox.make)
}
