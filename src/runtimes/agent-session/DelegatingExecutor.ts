import { Context, Duration, Effect, Layer, Option } from "effect"
import { type AgentSessionStatus, blockedStates, completedTurnStates, workingStates } from "../../domain/attachment.js"
import { ExecutorId } from "../../domain/ids.js"
import { AgentExecutor, ExecutorLiveness, TurnBlocked, type TurnInput, TurnFailed } from "../../pipeline/AgentExecutor.js"
import { AgentSessions } from "./AgentSessions.js"

const PREFIX = "attachment:"
/** How often a delegated turn asks a working session whether it is done. */
export const DELEGATED_POLL = Duration.seconds(2)

/** The notice for a session waiting on a human: actionable, and distinct from a failure. */
export const blockedNotice = (status: AgentSessionStatus) => {
  const waiting = status.state === "needs_permission" ? "waiting for permission" : "waiting for input"
  const said = status.latestResponse === undefined ? "" : ` It last said: ${status.latestResponse}`
  const where = status.remoteUrl === undefined ? "" : ` It can be opened at ${status.remoteUrl}.`
  return `The delegated session ${status.runtime}/${status.sessionId} is ${waiting}.${said}${where} Your next message here goes to that session.`
}

const notAttached = () => new TurnFailed({ code: "not_attached", reason: "the conversation was detached", retryable: true })

/** A read that could not be made is worth another attempt only when it timed out or threw. */
const retryableRead = (code: string) => code.endsWith("_timeout") || code.endsWith("_failed")

/**
 * Wraps an executor: a conversation attached to an external agent session has its turns
 * delegated to the session (`continue` with the turn's text as `prompt`); every other turn runs
 * on the wrapped executor. The session's state decides how the turn ends:
 *
 * - `completed`/`idle`: its `finalResponse` is the reply;
 * - `starting`/`running`/`stale`: the session is inspected every 2 s until it is not;
 * - `needs_input`/`needs_permission`: the user is told on the conversation, the turn ends blocked;
 * - `dead`/`failed`, `unknown`, or a session that cannot be asked: the turn fails with a notice
 *   (a timeout or a throwing callback is retried first).
 *
 * After a restart a delegated turn is `inspect`ed, never replayed, and ends the same way.
 */
export const delegating = <E, R>(base: Layer.Layer<AgentExecutor | ExecutorLiveness, E, R>) =>
  Layer.effectContext(
    Effect.gen(function* () {
      const inner = yield* AgentExecutor
      const innerLiveness = yield* ExecutorLiveness
      const sessions = yield* AgentSessions

      const conclude = (input: TurnInput, status: AgentSessionStatus): Effect.Effect<void | TurnBlocked, TurnFailed> => {
        const where = `${status.runtime}/${status.sessionId}`
        if (completedTurnStates.includes(status.state)) {
          const answer = status.finalResponse
          return answer === undefined || answer.trim() === "" ? Effect.void : input.reply(answer)
        }
        if (blockedStates.includes(status.state)) {
          return Effect.as(input.notice(`blocked:${status.state}`, blockedNotice(status)), new TurnBlocked({ state: status.state }))
        }
        if (status.state === "dead" || status.state === "failed") {
          const why = status.termination?.message ?? status.detail ?? status.error?.message
          return Effect.fail(new TurnFailed({
            code: `session_${status.state}`,
            reason: `the delegated session ${where} ${status.state === "dead" ? "ended without finishing the turn" : "failed"}${why === undefined ? "" : ` (${why})`}`,
            retryable: false
          }))
        }
        if (status.state === "unavailable") {
          const code = status.error?.code ?? "session_unavailable"
          return Effect.fail(new TurnFailed({ code, reason: `the delegated session ${where} could not be reached (${code})`, retryable: retryableRead(code) }))
        }
        return Effect.fail(new TurnFailed({ code: "session_state_unknown", reason: `the delegated session ${where} answered no state this host knows`, retryable: false }))
      }

      /** Waits while the session works, then ends the turn by its state. */
      const follow = (input: TurnInput, first: AgentSessionStatus) =>
        Effect.gen(function* () {
          let status = first
          while (workingStates.includes(status.state)) {
            yield* Effect.sleep(DELEGATED_POLL)
            status = (yield* sessions.inspect(input.conversation.id).pipe(Effect.catchTag("NotAttached", () => Effect.fail(notAttached())))).status
          }
          return yield* conclude(input, status)
        })

      const delegate = (input: TurnInput) =>
        Effect.gen(function* () {
          const prompt = input.messages.map((m) => m.text).join("\n\n")
          const status = yield* sessions.continueTurn(input.conversation.id, { prompt }).pipe(
            Effect.catchTag("NotAttached", () => Effect.fail(notAttached()))
          )
          return yield* follow(input, status)
        })

      const adoptDelegated = (input: TurnInput) =>
        sessions.inspect(input.conversation.id).pipe(
          Effect.catchTag("NotAttached", () => Effect.fail(notAttached())),
          Effect.flatMap((o) => follow(input, o.status))
        )

      const isDelegated = (executor: string) => executor.startsWith(PREFIX)

      return Context.make(AgentExecutor, AgentExecutor.of({
          allocate: (conversationId) =>
            Effect.flatMap(sessions.current(conversationId), Option.match({
              onNone: () => inner.allocate(conversationId),
              onSome: (a) => Effect.succeed(ExecutorId.make(`${PREFIX}${a.id}`))
            })),
          execute: (input) => (isDelegated(input.executor) ? delegate(input) : inner.execute(input)),
          adopt: (input) => (isDelegated(input.executor) ? adoptDelegated(input) : inner.adopt(input))
        })).pipe(Context.add(ExecutorLiveness, ExecutorLiveness.of({
          isAlive: (executor) => {
            if (!isDelegated(executor)) return innerLiveness.isAlive(executor)
            // The attachment must still be the conversation's current one; its session is then asked.
            return Effect.flatMap(sessions.currents, (currents) => {
              const a = currents.find((c) => `${PREFIX}${c.id}` === executor)
              return a === undefined ? Effect.succeed(false) : Effect.map(sessions.recoverTurn(a.conversationId), (r) => r !== "released")
            })
          }
        })))
    })
  ).pipe(Layer.provide(base))
