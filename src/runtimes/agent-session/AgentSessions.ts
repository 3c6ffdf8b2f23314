import { Clock, Context, Effect, Either, Layer, Option, Ref, Schema } from "effect"
import {
  type AgentSessionStatus,
  type Attachment,
  blockedStates,
  completedTurnStates,
  SessionMetadata,
  workingStates
} from "../../domain/attachment.js"
import { InvalidInput } from "../../domain/errors.js"
import type { AttachmentId, ConversationId } from "../../domain/ids.js"
import { problemsOf } from "../../domain/problems.js"
import { AgentSessionRuntimeRegistry, type CallOverrides } from "./AgentSessionRuntimeRegistry.js"
import { type Attached, AttachmentStore } from "./AttachmentStore.js"
import { NotAttached, UnknownRuntime } from "./errors.js"
import type { SessionRef } from "./runtime.js"

/**
 * Which session to attach a conversation to: the runtime id and the session's id in that
 * runtime (`sessionRef` is accepted as an alias of `sessionId`), with what else the ref carries.
 */
export const SessionTarget = Schema.Struct({
  runtimeId: Schema.NonEmptyTrimmedString.pipe(Schema.maxLength(128)),
  sessionId: Schema.NonEmptyTrimmedString.pipe(Schema.maxLength(1024)),
  providerSessionId: Schema.optional(Schema.NonEmptyTrimmedString.pipe(Schema.maxLength(1024))),
  host: Schema.optional(Schema.NonEmptyTrimmedString.pipe(Schema.maxLength(255))),
  remoteUrl: Schema.optional(Schema.NonEmptyTrimmedString.pipe(Schema.maxLength(2048))),
  metadata: Schema.optional(SessionMetadata)
})
export type SessionTarget = typeof SessionTarget.Type

const withAlias = (target: unknown) => {
  if (typeof target !== "object" || target === null) return target
  const t = target as Record<string, unknown>
  return t.sessionId === undefined && t.sessionRef !== undefined ? { ...t, sessionId: t.sessionRef, sessionRef: undefined } : t
}

/** One inspect: what was seen, under which token, and whether it landed (compare-and-set). */
export interface Observation {
  readonly attachment: Attachment
  readonly status: AgentSessionStatus
  readonly token: number
  readonly applied: boolean
}

export interface Detached {
  readonly attachment: Attachment
  /** The runtime's answer to `detach` when it was asked to stop the session, else the last observation. */
  readonly status: AgentSessionStatus | null
}

/**
 * What recovery does with a delegated turn found after a restart: `completed` (a completed-turn
 * state), `running` (starting, running or stale: re-adopt it and wait), `blocked` (it waits on a
 * human: re-adopt it, the turn ends blocked), `released` (dead, failed, unavailable, unknown, or
 * no attachment any more: the turn goes back to the queue).
 */
export type Recovery = "completed" | "running" | "blocked" | "released"

export const recoveryOf = (status: AgentSessionStatus): Recovery =>
  completedTurnStates.includes(status.state) ? "completed"
  : workingStates.includes(status.state) ? "running"
  : blockedStates.includes(status.state) ? "blocked"
  : "released"

export declare namespace AgentSessions {
  /**
   * Conversations delegated to external agent sessions. Every runtime call is bounded by the
   * registry's deadline and answers a status; the only failures are the typed ones below.
   */
  export interface Service {
    /** Attaches, or replaces the current attachment (which becomes superseded, named by `replaces`). */
    readonly attach: (conversationId: ConversationId, target: unknown) => Effect.Effect<Attached, InvalidInput | UnknownRuntime>
    /**
     * Marks the record detached. The runtime's `detach` (which stops the session in its runtime)
     * runs only when `stopRuntime` is asked for; otherwise the session is left as it is.
     */
    readonly detach: (
      conversationId: ConversationId,
      request?: { readonly reason?: string | undefined; readonly stopRuntime?: boolean | undefined },
      opts?: CallOverrides
    ) => Effect.Effect<Detached, NotAttached>
    readonly current: (conversationId: ConversationId) => Effect.Effect<Option.Option<Attachment>>
    readonly history: (conversationId: ConversationId) => Effect.Effect<ReadonlyArray<Attachment>>
    readonly currents: Effect.Effect<ReadonlyArray<Attachment>>
    /** Inspects the current session and applies the answer under a fresh token (compare-and-set). */
    readonly inspect: (conversationId: ConversationId, opts?: CallOverrides) => Effect.Effect<Observation, NotAttached>
    /** Hands the session `{ prompt }` through `continue`; the answer is recorded as an observation. */
    readonly continueTurn: (
      conversationId: ConversationId,
      request: { readonly prompt: string },
      opts?: CallOverrides
    ) => Effect.Effect<AgentSessionStatus, NotAttached>
    /** Recovery after a restart, decided by `inspect`. */
    readonly recoverTurn: (conversationId: ConversationId, opts?: CallOverrides) => Effect.Effect<Recovery>
    /** A fresh observation token, above every token of any stored record. */
    readonly nextObservationToken: Effect.Effect<number>
    /** Compare-and-set of one observation; false when refused (stale, or the record is no longer current). */
    readonly applyStatus: (id: AttachmentId, token: number, status: AgentSessionStatus) => Effect.Effect<boolean>
  }
}

/** The ref a callback sees: what the record knows, and the last state anyone reported. */
export const refOf = (a: Attachment): SessionRef => {
  const ref: { -readonly [K in keyof SessionRef]: SessionRef[K] } = { runtime: a.runtimeId, sessionId: a.sessionId }
  if (a.provider !== "") ref.provider = a.provider
  if (a.providerSessionId !== null) ref.providerSessionId = a.providerSessionId
  if (a.host !== null) ref.host = a.host
  if (a.remoteUrl !== null) ref.remoteUrl = a.remoteUrl
  if (a.metadata !== null) ref.metadata = a.metadata
  if (a.lastStatus !== null) ref.lastKnownState = a.lastStatus.state
  return ref
}

export class AgentSessions extends Context.Tag("pynchy/AgentSessions")<AgentSessions, AgentSessions.Service>() {
  static readonly make = Effect.gen(function* () {
    const store = yield* AttachmentStore
    const registry = yield* AgentSessionRuntimeRegistry
    // Tokens are durable, the counter is not: resume above every stored token, or every CAS would refuse.
    const seq = yield* Ref.make(yield* store.maxObservationToken)
    const nextObservationToken = Ref.updateAndGet(seq, (n) => n + 1)

    const applyStatus = (id: AttachmentId, token: number, status: AgentSessionStatus) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => store.applyStatus(id, token, status, now))

    const currentOrFail = (conversationId: ConversationId) =>
      Effect.flatMap(store.current(conversationId), Option.match({
        onNone: () => Effect.fail(new NotAttached({ conversationId })),
        onSome: Effect.succeed
      }))

    const attach = Effect.fn("AgentSessions.attach")(function* (conversationId: ConversationId, target: unknown) {
      const decoded = Schema.decodeUnknownEither(SessionTarget)(withAlias(target), { errors: "all" })
      if (Either.isLeft(decoded)) return yield* new InvalidInput({ what: "attachment target", problems: problemsOf(decoded.left) })
      const { runtimeId, ...session } = decoded.right
      const runtime = yield* registry.get(runtimeId)
      if (Option.isNone(runtime)) {
        return yield* new UnknownRuntime({ runtimeId, registered: (yield* registry.runtimes).map((r) => r.id) })
      }
      const now = yield* Clock.currentTimeMillis
      const attached = yield* store.attach({ conversationId, runtimeId, provider: runtime.value.provider, ...session, now })
      yield* Effect.logInfo(Option.isSome(attached.superseded) ? "attachment replaced" : "conversation attached").pipe(
        Effect.annotateLogs({ conversation: conversationId, attachment: attached.attachment.id, runtime: runtimeId })
      )
      return attached
    })

    const observe = (attachment: Attachment, call: (ref: SessionRef) => Effect.Effect<AgentSessionStatus>) =>
      Effect.gen(function* () {
        const token = yield* nextObservationToken
        const status = yield* call(refOf(attachment))
        const applied = yield* applyStatus(attachment.id, token, status)
        const latest = Option.getOrElse(yield* store.current(attachment.conversationId), () => attachment)
        return { attachment: latest, status, token, applied } satisfies Observation
      })

    const inspect = Effect.fn("AgentSessions.inspect")(function* (conversationId: ConversationId, opts?: CallOverrides) {
      const attachment = yield* currentOrFail(conversationId)
      return yield* observe(attachment, (ref) => registry.inspect(ref, opts))
    })

    return AgentSessions.of({
      attach,
      detach: Effect.fn("AgentSessions.detach")(function* (
        conversationId: ConversationId,
        request?: { readonly reason?: string | undefined; readonly stopRuntime?: boolean | undefined },
        opts?: CallOverrides
      ) {
        const attachment = yield* currentOrFail(conversationId)
        const reason = request?.reason ?? "detached"
        // Stopping someone else's session cannot be undone: only on an explicit request.
        const observation = request?.stopRuntime === true
          ? yield* observe(attachment, (ref) => registry.detach(ref, { reason }, opts))
          : null
        const detached = yield* store.detach(conversationId, yield* Clock.currentTimeMillis)
        const status = observation?.status ?? attachment.lastStatus
        yield* Effect.logInfo("conversation detached").pipe(
          Effect.annotateLogs({ conversation: conversationId, attachment: attachment.id, stopRuntime: observation !== null, state: status?.state ?? "(never observed)" })
        )
        return { attachment: Option.getOrElse(detached, () => attachment), status } satisfies Detached
      }),
      current: store.current,
      history: store.history,
      currents: store.currents,
      inspect,
      continueTurn: Effect.fn("AgentSessions.continueTurn")(function* (conversationId, request, opts) {
        const attachment = yield* currentOrFail(conversationId)
        const observation = yield* observe(attachment, (ref) => registry.continue(ref, { prompt: request.prompt }, opts))
        return observation.status
      }),
      recoverTurn: Effect.fn("AgentSessions.recoverTurn")(function* (conversationId: ConversationId, opts?: CallOverrides) {
        const observation = yield* Effect.option(inspect(conversationId, opts))
        const verdict = Option.match(observation, { onNone: () => "released" as const, onSome: (o) => recoveryOf(o.status) })
        yield* Effect.logInfo("delegated turn recovered").pipe(Effect.annotateLogs({ conversation: conversationId, verdict }))
        return verdict
      }),
      nextObservationToken,
      applyStatus
    })
  })

  /** Needs an AttachmentStore layer (database, directory or memory) and the registry. */
  static readonly layer = Layer.effect(AgentSessions, AgentSessions.make)
}
