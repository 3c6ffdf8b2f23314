/**
 * The host's side of one runner's IPC for the length of its turn: replies become deliveries (up
 * to the per-turn cap), text deltas become progress (best-effort, not recorded), tool calls become
 * host actions under policy, errors are recorded or end the turn. Everything here arrived from the sandbox and was decoded by the IPC schema.
 */
import { Effect, Queue, type Scope } from "effect"
import type { HostActions } from "../actions/HostActions.js"
import { TurnFailed, type TurnInput } from "../pipeline/AgentExecutor.js"
import type { IpcChannel } from "./IpcServer.js"

export interface ServeRunner {
  readonly input: TurnInput
  readonly ipc: IpcChannel
  /** Settles when the sandbox has ended. */
  readonly exited: Effect.Effect<{ readonly code: number | null }>
  readonly actions: HostActions.Service
  /** Replies one turn may send; the next one fails the turn. */
  readonly maxReplies: number
}

const failed = (code: string, reason: string, retryable: boolean) => new TurnFailed({ code, reason, retryable })

/** Serves the runner until `done` (the number of replies), a fatal error, or its end. */
export const serveRunner = ({ actions, exited, input, ipc, maxReplies }: ServeRunner): Effect.Effect<number, TurnFailed, Scope.Scope> =>
  Effect.gen(function* () {
    let replies = 0
    // A runner that ends before it connected is over. One that connected is over when its
    // socket closes, which comes after every line it wrote: the process's exit can be seen
    // first, and taking it as the end would drop a `done` still in the socket.
    // Its connection can also be accepted after its exit is seen (two handles, one loop turn):
    // a runner that wrote everything and exited at once gets a grace to be read.
    const endedUnconnected = Effect.suspend(() => (ipc.connected() ? Effect.void : Queue.offer(ipc.events, { _tag: "closed" })))
    yield* Effect.forkScoped(Effect.flatMap(exited, () => (ipc.connected() ? Effect.void : Effect.zipRight(Effect.sleep("1 second"), endedUnconnected))))
    while (true) {
      const event = yield* Queue.take(ipc.events)
      switch (event._tag) {
        case "text_delta":
          // Shown on the channel if it can, never recorded: the reply that follows is what counts.
          yield* input.progress({ type: "delta", text: event.text })
          break
        case "reply":
          if (++replies > maxReplies) return yield* failed("too_many_replies", `the agent sent more than ${maxReplies} replies in one turn`, false)
          yield* input.reply(event.text)
          break
        case "tool_call": {
          const result = yield* actions.call(input.workspace, event.tool, event.input, { turnId: input.turn.id, conversationId: input.conversation.id }).pipe(
            Effect.map((output) => ({ ok: true, output })),
            Effect.catchTag("ActionRefused", (r) => {
              const refusal = { ok: false, output: { code: r.code, message: r.reason } }
              return Effect.as(Effect.logInfo("host action refused").pipe(Effect.annotateLogs({ action: r.action, code: r.code, turn: input.turn.id })), refusal)
            })
          )
          yield* ipc.send({ _tag: "tool_result", callId: event.callId, ...result })
          break
        }
        case "error":
          if (event.fatal) return yield* failed(event.code, event.message, event.retryable)
          yield* Effect.logWarning("sandbox reported an error").pipe(Effect.annotateLogs({ code: event.code, turn: input.turn.id }))
          break
        case "done":
          return replies
        case "closed": {
          const exit = yield* exited
          return yield* failed("sandbox_exited", `the sandbox ended before the turn was done (exit ${exit.code ?? "signal"})`, true)
        }
      }
    }
  })
