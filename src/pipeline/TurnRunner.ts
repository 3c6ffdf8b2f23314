import { Cause, Clock, Context, Data, Duration, Effect, Layer, Option } from "effect"
import { HostConfig } from "../config/HostConfig.js"
import { ContextStore } from "../db/ContextStore.js"
import { MessageStore } from "../db/MessageStore.js"
import { TaskStore } from "../db/TaskStore.js"
import { TurnStore } from "../db/TurnStore.js"
import type { ExecutorId, HostEpoch, MessageId } from "../domain/ids.js"
import { isUntriggered, Message } from "../domain/message.js"
import { fileLines } from "../files/inbox.js"
import { outboxHasFiles, refusedLine, takeOutbox } from "../files/outbox.js"
import { workspaceDirOf } from "../config/workspace-folder.js"
import { utcMidnight } from "../domain/task.js"
import type { Turn } from "../domain/turn.js"
import type { Conversation, Workspace } from "../domain/workspace.js"
import { DeliveryStore } from "../db/DeliveryStore.js"
import { EventBus } from "../events/EventBus.js"
import { continuing } from "../telemetry/trace-context.js"
import { AgentExecutor, TurnBlocked, TurnFailed, type TurnInput } from "./AgentExecutor.js"
import { Channels } from "./Channels.js"
import { Outbox } from "./Outbox.js"
import { noProgress } from "./progress.js"
import { Workspaces } from "./Workspaces.js"

/** How a run of a turn ended, for the queue to act on. */
export type TurnOutcome = Data.TaggedEnum<{
  Completed: {}
  /** Ended without an answer, waiting on a human (the user was told): done, not failed. */
  Blocked: { readonly state: string }
  /** Queued again; due at `at` (epoch millis). */
  RetryAt: { readonly at: number }
  Failed: { readonly code: string }
  /** Another epoch owns the turn now (fenced): nothing was written. */
  Lost: {}
}>
export const TurnOutcome = Data.taggedEnum<TurnOutcome>()

export interface StartedTurn {
  readonly turn: Turn
  readonly messageIds: ReadonlyArray<MessageId>
  readonly executor: ExecutorId
  readonly epoch: HostEpoch
  /** true for a turn whose executor survived a restart: wait for it instead of starting it. */
  readonly adopted?: boolean
  /** Its conversation and claimed messages, when whoever started it read them already (`TurnStore.acquire` does). */
  readonly loaded?: { readonly conversation: Option.Option<Conversation>; readonly messages: ReadonlyArray<Message> }
}

/** Durable retries: the not-before time is stored, so a restart keeps the backoff. */
export const retryDelayMs = (baseMs: number, attempt: number): number => Math.min(baseMs * 2 ** Math.max(0, attempt - 1), 10 * 60_000)

/** A message that is exactly this starts a new context for its conversation (docs/agent.md). */
export const NEW_CONTEXT_COMMAND = "/new"
export const NEW_CONTEXT_NOTICE = "Started a new conversation: earlier messages will not be sent again."

/** A scheduled turn that answers exactly this delivers nothing and is recorded quiet (docs/schedules.md). */
export const NO_REPLY = "NO_REPLY"
/** The sender of scheduled messages (src/schedules). */
const SCHEDULE_SENDER = "schedule"

export declare namespace TurnRunner {
  /** Runs one started turn to its outcome: execute, record replies, complete, retry or fail. */
  export interface Service {
    readonly run: (started: StartedTurn) => Effect.Effect<TurnOutcome>
  }
}

export class TurnRunner extends Context.Tag("pynchy/TurnRunner")<TurnRunner, TurnRunner.Service>() {
  static readonly make = Effect.gen(function* () {
    const { config, dataDir } = yield* HostConfig
    const deliveries = yield* DeliveryStore
    const turns = yield* TurnStore
    const messages = yield* MessageStore
    const workspaces = yield* Workspaces
    const outbox = yield* Outbox
    const executor = yield* AgentExecutor
    const channels = yield* Channels
    const contexts = yield* ContextStore
    const tasks = yield* TaskStore
    const bus = yield* EventBus

    // `/new` is handled here, inside the turn that claimed it: moving the start only goes forward
    // and the notice is keyed by turn and message, so a rerun after a crash repeats neither, and
    // the message is marked handled with its turn like any other. The agent sees what follows it.
    const startAfresh = (input: TurnInput) =>
      Effect.gen(function* () {
        let at = input.messages.length - 1
        while (at >= 0 && input.messages[at]!.text.trim() !== NEW_CONTEXT_COMMAND) at--
        if (at < 0) return input
        const command = input.messages[at]!
        yield* contexts.moveStart(input.conversation.id, command.id, input.turn.id)
        yield* input.notice(`new:${command.id}`, NEW_CONTEXT_NOTICE)
        return { ...input, messages: input.messages.slice(at + 1) }
      })

    const prepare = (started: StartedTurn, claimed: ReadonlyArray<Message>, last: LastReply) =>
      Effect.gen(function* () {
        const { turn } = started
        const conversation = started.loaded?.conversation ?? (yield* messages.conversation(turn.conversationId))
        if (Option.isNone(conversation)) return yield* new TurnFailed({ code: "unknown_conversation", reason: `conversation ${turn.conversationId} is gone`, retryable: false })
        const workspace = yield* workspaces.get(conversation.value.workspace)
        if (Option.isNone(workspace)) {
          return yield* new TurnFailed({ code: "unknown_workspace", reason: `workspace '${conversation.value.workspace}' is not configured`, retryable: false })
        }
        let n = 0
        // A turn of scheduled messages only may stay silent: NO_REPLY is not delivered.
        const scheduled = claimed.length > 0 && claimed.every((m) => m.sender === SCHEDULE_SENDER)
        // A turn of scheduled messages spends at most what their capped tasks have left today (UTC).
        const now = yield* Clock.currentTimeMillis
        const tokenBudget = scheduled ? yield* tasks.tokensLeft(started.messageIds, utcMidnight(now)) : null
        const { connection, place } = conversation.value
        // Group messages that did not use the trigger are context only: alone, they start no agent run.
        const silent = claimed.length > 0 && claimed.every(isUntriggered)
        const feed = silent ? noProgress : yield* channels.progress({ conversationId: turn.conversationId, connection, place, turnId: turn.id })
        const input: TurnInput = {
          turn,
          executor: started.executor,
          conversation: conversation.value,
          workspace: workspace.value,
          messages: silent ? [] : claimed,
          // A reply written while the agent's outbox holds files is held until the turn ends, so
          // the files go with it (each earlier one is recorded when the next one comes); any other
          // is recorded at once.
          reply: (text) =>
            Effect.suspend(() => {
              if (scheduled && text.trim() === NO_REPLY) return Effect.void
              const idempotencyKey = `t${turn.id}:${n++}`
              return Effect.zipRight(feed.replied(idempotencyKey), last.hold(idempotencyKey, text, workspaceDirOf(dataDir, workspace.value)))
            }),
          notice: (key, text) => outbox.record(turn.conversationId, turn.id, [{ idempotencyKey: `t${turn.id}:${key}`, kind: "notice", text }]),
          // Deltas belong to the next reply: they carry the key its delivery will have.
          progress: (event) => Effect.suspend(() => feed.delta(`t${turn.id}:${n}`, event.text)),
          ...(tokenBudget !== null ? { tokenBudget } : {})
        }
        const fresh = yield* startAfresh(input)
        // The agent reads the files a message came with (saved in the inbox, or refused) under its text.
        return { ...fresh, messages: fresh.messages.map(withFileLines) }
      })

    /** The turn's last reply, held until the turn ends while its outbox has files (see `reply`). */
    interface LastReply {
      readonly hold: (idempotencyKey: string, text: string, workspaceDir: string) => Effect.Effect<void>
      /** Records the held reply; with `workspace`, with the files of its outbox (a completed turn). */
      readonly release: (workspace: Workspace | undefined) => Effect.Effect<void>
      workspace: Workspace | undefined
    }
    const lastReply = (started: StartedTurn): LastReply => {
      const { turn } = started
      let held: { readonly idempotencyKey: string; readonly text: string } | undefined
      const record = (idempotencyKey: string, text: string) => outbox.record(turn.conversationId, turn.id, [{ idempotencyKey, kind: "reply", text }])
      return {
        workspace: undefined,
        hold: (idempotencyKey, text, workspaceDir) =>
          Effect.gen(function* () {
            const previous = held
            held = undefined
            if (previous !== undefined) yield* record(previous.idempotencyKey, previous.text)
            if (yield* outboxHasFiles(workspaceDir)) held = { idempotencyKey, text }
            else yield* record(idempotencyKey, text)
          }),
        release: (workspace) =>
          Effect.gen(function* () {
            const reply = held
            held = undefined
            // Most turns leave no file: the outbox is only opened when it holds one.
            const workspaceDir = workspace === undefined ? undefined : workspaceDirOf(dataDir, workspace)
            if (workspaceDir === undefined || !(yield* outboxHasFiles(workspaceDir))) return reply === undefined ? undefined : yield* record(reply.idempotencyKey, reply.text)
            const taken = yield* takeOutbox(workspaceDir, config.files)
            if (taken.files.length === 0 && taken.refused.length === 0) return reply === undefined ? undefined : yield* record(reply.idempotencyKey, reply.text)
            for (const r of taken.refused) {
              yield* Effect.logWarning("a file in the outbox was not attached").pipe(Effect.annotateLogs({ turn: turn.id, file: r.name, reason: r.reason }))
            }
            // Files without a reply to carry them get one of their own.
            const key = reply?.idempotencyKey ?? `t${turn.id}:files`
            const text = [
              reply?.text ?? (taken.files.length > 0 ? `(Files: ${taken.files.map((f) => f.name).join(", ")})` : ""),
              taken.refused.length > 0 ? refusedLine(taken.refused) : ""
            ].filter((t) => t !== "").join("\n\n")
            // Stored before the delivery is recorded, removed from the outbox after: a crash between
            // them reruns the turn, whose reply finds its key (and its files) already recorded.
            yield* deliveries.storeFiles(key, taken.files)
            yield* record(key, text)
            yield* taken.clear
          })
      }
    }

    const withFileLines = (m: Message): Message => {
      const lines = fileLines(m.metadata)
      return lines.length === 0 ? m : new Message({ ...m, text: `${m.text}\n${lines.join("\n")}` })
    }

    const attempt = Effect.fnUntraced(function* (started: StartedTurn, claimed: ReadonlyArray<Message>) {
      const { turn, epoch } = started
      // The runs of scheduled messages end with the turn (complete, block or fail settles them).
      const ids = { turnId: turn.id, conversationId: turn.conversationId, attempt: turn.attempts }
      yield* bus.publish({ type: "turn.started", ...ids, executor: started.executor, messageIds: started.messageIds, adopted: started.adopted === true })
      const last = lastReply(started)
      const outcome = yield* prepare(started, claimed, last).pipe(
        Effect.flatMap((input) =>
          // Nothing after a `/new`: no agent turn.
          input.messages.length === 0 && !started.adopted ? Effect.void : (started.adopted ? executor.adopt(input) : executor.execute(input)).pipe(
            // An agent ran: its outbox goes with its last reply if the run completes.
            Effect.ensuring(Effect.sync(() => { last.workspace = input.workspace })),
            Effect.timeoutFail({
              duration: Duration.seconds(input.workspace.sandbox.timeoutSeconds),
              onTimeout: () => new TurnFailed({ code: "turn_timeout", reason: `no answer within ${input.workspace.sandbox.timeoutSeconds}s`, retryable: true })
            })
          )
        ),
        // The progress feed (typing, streamed text) ends with the run.
        Effect.scoped,
        // A defect in an executor is one failed attempt, not a dead host.
        Effect.catchAllDefect((defect) => new TurnFailed({ code: "executor_defect", reason: Cause.pretty(Cause.die(defect)).split("\n")[0] ?? "defect", retryable: true })),
        Effect.either
      )
      const blocked = outcome._tag === "Right" && outcome.right instanceof TurnBlocked ? outcome.right : null
      yield* last.release(outcome._tag === "Right" && blocked === null ? last.workspace : undefined)
      if (outcome._tag === "Right") {
        if (blocked === null) {
          if (!(yield* turns.complete(turn.id, epoch))) return TurnOutcome.Lost()
          yield* bus.publish({ type: "turn.completed", ...ids, code: "ok" })
          return TurnOutcome.Completed()
        }
        yield* Effect.logInfo("turn ended blocked").pipe(Effect.annotateLogs({ turn: turn.id, state: blocked.state }))
        if (!(yield* turns.block(turn.id, epoch, blocked.state))) return TurnOutcome.Lost()
        yield* bus.publish({ type: "turn.completed", ...ids, code: `blocked:${blocked.state}` })
        return TurnOutcome.Blocked({ state: blocked.state })
      }
      const failure = outcome.left
      yield* Effect.logWarning("turn attempt failed").pipe(
        Effect.annotateLogs({ turn: turn.id, code: failure.code, attempt: turn.attempts, retryable: failure.retryable })
      )
      if (failure.retryable && turn.attempts < config.limits.maxTurnAttempts) {
        // A survivor that could not be taken over is an interruption, not a failure of the agent: again at once.
        const at = (yield* Clock.currentTimeMillis) + (started.adopted ? 0 : retryDelayMs(config.limits.retryBaseMs, turn.attempts))
        if (!(yield* turns.retryLater(turn.id, epoch, `${failure.code}: ${failure.reason}`, at))) return TurnOutcome.Lost()
        yield* bus.publish({ type: "turn.retried", ...ids, code: failure.code, notBefore: at })
        return TurnOutcome.RetryAt({ at })
      }
      if (!(yield* turns.fail(turn.id, epoch, `${failure.code}: ${failure.reason}`))) return TurnOutcome.Lost()
      yield* bus.publish({ type: "turn.failed", ...ids, code: failure.code })
      yield* outbox.record(turn.conversationId, turn.id, [{
        idempotencyKey: `t${turn.id}:failed`,
        kind: "notice",
        text: `(Sorry, I could not answer: ${failure.reason}.)`
      }])
      return TurnOutcome.Failed({ code: failure.code })
    })

    // Each run of a turn (a retry, a rerun after a restart) is a span in the trace of the first
    // message it answers, from the context stored with the message; the others are linked.
    const run = (started: StartedTurn) =>
      // The dispatcher's acquire read the claimed messages with the turn; an adopted turn reads them here.
      Effect.flatMap(started.loaded !== undefined ? Effect.succeed(started.loaded.messages) : messages.byIds(started.messageIds), (claimed) =>
        attempt(started, claimed).pipe(
          Effect.tap((outcome) => Effect.annotateCurrentSpan("pynchy.turn.outcome", outcome._tag)),
          Effect.withSpan("TurnRunner.run", {
            ...continuing(claimed.map((m) => m.traceParent)),
            attributes: { "pynchy.turn.id": started.turn.id, "pynchy.turn.attempt": started.turn.attempts, "pynchy.conversation.id": started.turn.conversationId },
            captureStackTrace: false
          })
        ))

    return TurnRunner.of({ run })
  })

  static readonly layer = Layer.effect(TurnRunner, TurnRunner.make)
}
