import { Context, Effect, Layer, Option, Schedule } from "effect"
import type { AgentSessionStatus } from "../../domain/attachment.js"
import { ExecutorId } from "../../domain/ids.js"
import { AgentExecutor, ExecutorLiveness, type TurnInput, TurnFailed } from "../../pipeline/AgentExecutor.js"
import { AgentSessions } from "./AgentSessions.js"

const PREFIX = "attachment:"

/**
 * Wraps an executor: a conversation attached to an external agent session has its turns
 * delegated through the session's `continue`; every other turn runs on the wrapped executor.
 * After a restart a delegated turn is first `inspect`ed: running or finished sessions are
 * alive (adopted: the finished one answers at once), unknown ones are released.
 */
export const delegating = <E, R>(base: Layer.Layer<AgentExecutor | ExecutorLiveness, E, R>) =>
  Layer.effectContext(
    Effect.gen(function* () {
      const inner = yield* AgentExecutor
      const innerLiveness = yield* ExecutorLiveness
      const sessions = yield* AgentSessions

      const failed = (code: string | undefined, detail: string | undefined) =>
        new TurnFailed({ code: code ?? "session_unavailable", reason: detail ?? "the agent session did not answer", retryable: true })

      const answer = (input: TurnInput, status: { readonly output?: string | undefined }) =>
        status.output !== undefined && status.output.trim() !== "" ? input.reply(status.output) : Effect.void

      const delegate = (input: TurnInput) =>
        Effect.gen(function* () {
          const request = input.messages.map((m) => m.text).join("\n\n")
          const status = yield* sessions.continueTurn(input.conversation.id, { text: request, turnId: input.turn.id }).pipe(
            Effect.catchTag("NotAttached", () => Effect.fail(new TurnFailed({ code: "not_attached", reason: "the conversation was detached", retryable: true })))
          )
          if (status.state === "unavailable" || status.state === "unknown") return yield* failed(status.code, status.detail)
          yield* answer(input, status)
        })

      /** Waits for a re-adopted session to finish, by inspecting it; its output is the reply. */
      const adoptDelegated = (input: TurnInput) =>
        sessions.inspect(input.conversation.id).pipe(
          Effect.catchTag("NotAttached", () => Effect.fail(new TurnFailed({ code: "not_attached", reason: "the conversation was detached", retryable: true }))),
          Effect.flatMap((o): Effect.Effect<AgentSessionStatus, TurnFailed | "still running"> =>
            o.status.state === "running" ? Effect.fail("still running" as const)
            : o.status.state === "finished" || o.status.state === "idle" ? Effect.succeed(o.status)
            : Effect.fail(failed(o.status.code, o.status.detail))
          ),
          Effect.retry({ while: (e) => e === "still running", schedule: Schedule.spaced("2 seconds") }),
          Effect.catchIf((e): e is "still running" => e === "still running", () => Effect.fail(failed("session_running", "still running"))),
          Effect.flatMap((status) => answer(input, status))
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
