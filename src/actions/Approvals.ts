/**
 * Human approval of high-risk host actions. A request becomes a pending row and a notice in the
 * conversation ("Reply `approve <code>` or `deny <code>`") that names the action and shows a
 * bounded, redacted summary of its input; the caller waits under a deadline for `decide` (this
 * process) or the row (another process). Past the deadline the row expires and the answer is no.
 *
 * An approval is single-use: it is bound to (turn, attempt, action, input digest) and consumed by
 * one compare-and-set in the database when the action is about to run. A second call with the
 * same input asks again; of concurrent twins waiting on one approval, one runs and the others
 * ask again; a retry of the turn (a later attempt) never finds an earlier attempt's rows. Within
 * one attempt a denied or expired request answers the same question at once (no notice spam),
 * and a pending one survives a restart of the host and is waited for again under its code.
 *
 * Replies are read from the messages Ingest commits (InboundCommitted), in whichever process
 * commits them: the host wakes its waiter at once; a process that only writes (`pynchy send`, the
 * MCP server) decides the row with `layerReplies`, and the host's waiter sees it at its next
 * re-check of the row (within a second). The decision is a compare-and-set in the shared
 * database, so it holds even when no host runs, and the reply wakes the host as any message does.
 */
import { Clock, Context, Deferred, Duration, Effect, Layer, Option } from "effect"
import { createHash, randomInt } from "node:crypto"
import type { ConversationId, TurnId } from "../domain/ids.js"
import { EventBus } from "../events/EventBus.js"
import { InboundCommitted } from "../pipeline/InboundCommitted.js"
import { Outbox } from "../pipeline/Outbox.js"
import type { RiskTier } from "../contracts/plugin.js"
import { type Approval, ApprovalStore } from "./ApprovalStore.js"
import { inputSummary } from "./summary.js"

/**
 * How a request ended: only `approved` lets the action run, and it has been consumed for this
 * caller. `unavailable`: this host has no one to ask (`Approvals.layerNone`).
 */
export type ApprovalVerdict = "approved" | "denied" | "expired" | "unavailable"

const CODE_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"
const REPLY = /^\s*(approve|deny)\s+([a-z0-9]{6})\s*$/i
// Longest text REPLY can match without absurd padding: a quick no before the regex runs.
const MAX_REPLY = 64
const POLL = Duration.seconds(1)

const canonical = (v: unknown): unknown =>
  Array.isArray(v)
    ? v.map(canonical)
    : v !== null && typeof v === "object"
    ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, canonical((v as Record<string, unknown>)[k])]))
    : v

/** sha256 of the input's canonical JSON (keys sorted): the input itself is never stored or shown. */
export const inputDigest = (input: unknown): string =>
  createHash("sha256").update(JSON.stringify(canonical(input)) ?? "null").digest("hex")

const newCode = Effect.sync(() => Array.from({ length: 6 }, () => CODE_ALPHABET[randomInt(CODE_ALPHABET.length)]).join(""))

const decideCode = Effect.fn("Approvals.decide")(function* (conversationId: ConversationId, status: "approved" | "denied", code: string, decidedBy: string) {
  const store = yield* ApprovalStore
  const row = yield* store.decide(code, conversationId, status, decidedBy, yield* Clock.currentTimeMillis)
  if (Option.isNone(row)) return Option.none<Approvals.Decision>()
  yield* Effect.flatMap(EventBus, (bus) => bus.publish({ type: "approval.decided", code, conversationId, action: row.value.action, status }))
  yield* Effect.logInfo("approval decided").pipe(Effect.annotateLogs({ action: row.value.action, code, status }))
  return Option.some<Approvals.Decision>({ code, status })
})

/**
 * `decide` without a waiter to wake: for a process that only writes (`layerReplies`); the host
 * waiting on the request sees the row at its next re-check.
 */
export const decideReply = (conversationId: ConversationId, text: string, decidedBy: string): Effect.Effect<Option.Option<Approvals.Decision>, never, ApprovalStore | EventBus> => {
  const match = text.length <= MAX_REPLY ? REPLY.exec(text) : null
  if (match === null) return Effect.succeedNone
  return decideCode(conversationId, match[1]!.toLowerCase() === "approve" ? "approved" : "denied", match[2]!.toLowerCase(), decidedBy)
}

export declare namespace Approvals {
  export interface Request {
    readonly conversationId: ConversationId
    /** The asking turn; null never matches an earlier request. */
    readonly turnId: TurnId | null
    readonly action: string
    readonly input: unknown
    readonly risk: RiskTier
    /** How long a new request waits for a human. */
    readonly deadline: Duration.DurationInput
  }

  export interface Decision {
    readonly code: string
    readonly status: "approved" | "denied"
  }

  export interface Service {
    /**
     * Asks the conversation's humans and waits. An earlier request of the same turn attempt,
     * action and input answers from its row (denied, expired) or is waited for until its own
     * deadline (pending); a consumed one is history, so the question is asked again. `approved`
     * means the approval was consumed for this caller, who runs the action now: one approval, one
     * run. Fails closed: anything but a human's approval in time is not `approved`.
     */
    readonly request: (request: Request) => Effect.Effect<ApprovalVerdict>
    /**
     * Applies an inbound message that reads `approve <code>` or `deny <code>` to a pending request
     * of the same conversation; none for any other text (checked without touching the database),
     * an unknown code, another conversation's code, or a request already decided or expired.
     * `layer` applies every message this process's Ingest commits.
     */
    readonly decide: (conversationId: ConversationId, text: string, decidedBy: string) => Effect.Effect<Option.Option<Decision>>
    /**
     * Decides a pending request by its code, as a reply `approve <code>` in its conversation would
     * (the Control UI's buttons): none for an unknown code or one already decided or expired.
     */
    readonly decideCode: (code: string, status: "approved" | "denied", decidedBy: string) => Effect.Effect<Option.Option<Decision>>
  }
}

export class Approvals extends Context.Tag("pynchy/Approvals")<Approvals, Approvals.Service>() {
  static readonly make = Effect.gen(function* () {
    const store = yield* ApprovalStore
    const outbox = yield* Outbox
    const committed = yield* InboundCommitted
    const bus = yield* EventBus
    const waiters = new Map<string, Deferred.Deferred<ApprovalVerdict>>()

    const waiterOf = (code: string) =>
      Effect.gen(function* () {
        const known = waiters.get(code)
        if (known !== undefined) return known
        const created = yield* Deferred.make<ApprovalVerdict>()
        waiters.set(code, created)
        return created
      })

    // What a row came to: `consumed` is an approval a twin already used.
    const verdictOf = (row: Option.Option<Approval>): Approval["status"] =>
      Option.isSome(row) && row.value.status !== "pending" ? row.value.status : "expired"

    /** The request's row: the earlier one of this turn, or a new pending one under a fresh code. */
    const open = (request: Approvals.Request, digest: string, now: number) =>
      Effect.gen(function* () {
        const earlier = (turnId: TurnId | null) => (turnId === null ? Effect.succeedNone : store.find(turnId, request.action, digest))
        const open = (row: Option.Option<Approval>) => Option.filter(row, (r) => r.status !== "consumed")
        const found = open(yield* earlier(request.turnId))
        if (Option.isSome(found)) return found.value
        // Retry only a code collision; a concurrent twin of this request is found by `earlier`.
        for (let attempt = 0; attempt < 8; attempt++) {
          const fresh = {
            id: yield* newCode,
            conversationId: request.conversationId,
            turnId: request.turnId,
            action: request.action,
            inputDigest: digest,
            createdAt: now,
            expiresAt: now + Duration.toMillis(request.deadline)
          }
          const inserted = yield* store.insert(fresh)
          if (Option.isSome(inserted)) {
            yield* Effect.logInfo("approval requested").pipe(Effect.annotateLogs({ action: request.action, code: fresh.id, conversation: request.conversationId }))
            yield* bus.publish({ type: "approval.asked", code: fresh.id, conversationId: request.conversationId, turnId: request.turnId, action: request.action, risk: request.risk, expiresAt: fresh.expiresAt })
            return inserted.value
          }
          const twin = open(yield* earlier(request.turnId))
          if (Option.isSome(twin)) return twin.value
        }
        return yield* Effect.dieMessage("approvals: no free approval code after 8 attempts")
      })

    const polled = (code: string): Effect.Effect<Approval["status"]> =>
      Effect.sleep(POLL).pipe(
        Effect.zipRight(store.get(code)),
        Effect.flatMap((row) => (Option.isSome(row) && row.value.status !== "pending" ? Effect.succeed(row.value.status) : polled(code)))
      )

    /** A pending row's end: a human's answer in time, else expired. */
    const settle = (request: Approvals.Request, row: Approval, now: number) =>
      Effect.gen(function* () {
        const remaining = row.expiresAt - now
        if (remaining > 0) {
          // The waiter exists before anyone is told the code, so a quick answer is not missed.
          const waiter = yield* waiterOf(row.id)
          // Recorded for a found pending row too: the key dedupes, and a crash between the insert
          // and this call would otherwise leave a request nobody was told about.
          const notice = outbox.record(row.conversationId, row.turnId, [{
            idempotencyKey: `approval:${row.id}`,
            kind: "notice",
            // The real reply comes before the agent's text, which may itself read like one.
            text: `Approval needed: the assistant wants to run \`${row.action}\` (risk: ${request.risk}). ` +
              `Reply \`approve ${row.id}\` or \`deny ${row.id}\` within ${Math.ceil(remaining / 1000)} s. Input: \`${inputSummary(request.input)}\``
          }])
          const decided = yield* notice.pipe(
            Effect.zipRight(Effect.race(Deferred.await(waiter), polled(row.id))),
            Effect.timeoutTo({ duration: Duration.millis(remaining), onSuccess: Option.some, onTimeout: Option.none }),
            Effect.ensuring(Effect.sync(() => waiters.delete(row.id)))
          )
          if (Option.isSome(decided)) return decided.value
        }
        const ended = verdictOf(yield* store.expire(row.id, yield* Clock.currentTimeMillis))
        yield* Effect.logInfo("approval ended").pipe(Effect.annotateLogs({ action: row.action, code: row.id, verdict: ended }))
        if (ended === "expired") yield* bus.publish({ type: "approval.decided", code: row.id, conversationId: row.conversationId, action: row.action, status: "expired" })
        return ended
      })

    const request = Effect.fn("Approvals.request")(function* (request: Approvals.Request) {
      const digest = inputDigest(request.input)
      // Each round past the first follows a twin's use of the approval and waits on a new request
      // (a human's answer, or its deadline): the loop cannot spin.
      while (true) {
        const now = yield* Clock.currentTimeMillis
        const row = yield* open(request, digest, now)
        const verdict = row.status === "pending" ? yield* settle(request, row, now) : row.status
        if (verdict === "denied" || verdict === "expired") return verdict
        if (verdict === "approved" && (yield* store.consume(row.id, yield* Clock.currentTimeMillis))) {
          yield* Effect.logInfo("approval consumed").pipe(Effect.annotateLogs({ action: row.action, code: row.id }))
          return "approved" as const
        }
        // Not ours to use. A twin consumed it: this call asks again. Otherwise the turn moved on to
        // a later attempt, whose calls ask for themselves: this one is closed.
        const current = yield* store.get(row.id)
        if (Option.isNone(current) || current.value.status !== "consumed") return "expired" as const
      }
    })

    const wake = (decided: Option.Option<Approvals.Decision>) => {
      const waiter = Option.isSome(decided) ? waiters.get(decided.value.code) : undefined
      return waiter === undefined || Option.isNone(decided) ? Effect.void : Deferred.succeed(waiter, decided.value.status)
    }
    const decide: Approvals.Service["decide"] = (conversationId, text, decidedBy) =>
      Effect.tap(decideReply(conversationId, text, decidedBy), wake).pipe(Effect.provideService(ApprovalStore, store), Effect.provideService(EventBus, bus))

    const decideByCode: Approvals.Service["decideCode"] = (code, status, decidedBy) =>
      Effect.gen(function* () {
        const row = yield* store.get(code)
        if (Option.isNone(row)) return Option.none<Approvals.Decision>()
        return yield* decideCode(row.value.conversationId, status, code, decidedBy)
      }).pipe(Effect.tap(wake), Effect.provideService(ApprovalStore, store), Effect.provideService(EventBus, bus))

    yield* committed.consume((m) => Effect.asVoid(decide(m.conversationId, m.text, m.sender)))

    return Approvals.of({ request, decide, decideCode: decideByCode })
  })

  /**
   * Asks in the conversation and decides the replies this process commits. Scoped: it reads
   * InboundCommitted while open. Needs Outbox, InboundCommitted and SqlClient (migrated through
   * 0003_approvals_single_use).
   */
  static readonly layer = Layer.scoped(Approvals, Approvals.make).pipe(Layer.provide(ApprovalStore.layer))

  /**
   * For a process that commits inbound messages but asks nothing and runs no actions (`pynchy
   * send`, the MCP server): a reply committed here decides the approval in the database, where the
   * host waiting on it finds it. Needs InboundCommitted and SqlClient.
   */
  static readonly layerReplies = Layer.scopedDiscard(
    Effect.gen(function* () {
      const context = yield* Effect.context<ApprovalStore | EventBus>()
      const committed = yield* InboundCommitted
      yield* committed.consume((m) => decideReply(m.conversationId, m.text, m.sender).pipe(Effect.asVoid, Effect.provide(context)))
    })
  ).pipe(Layer.provide(ApprovalStore.layer))

  /** For a host with no one to ask (a test, a bare executor): every request is `unavailable`, no reply decides anything. */
  static readonly layerNone = Layer.succeed(Approvals, Approvals.of({
    request: () => Effect.succeed("unavailable" as const),
    decide: () => Effect.succeedNone,
    decideCode: () => Effect.succeedNone
  }))
}
