import { Effect, Layer } from "effect"
import { randomUUID } from "node:crypto"
import { ExecutorId } from "../../src/domain/ids.js"
import { AgentExecutor, ExecutorLiveness, TurnFailed } from "../../src/pipeline/AgentExecutor.js"
import { ConversationContext } from "../../src/pipeline/ConversationContext.js"

/**
 * An in-process agent that answers with the history it was given and the messages it answers:
 * `context: <earlier user texts | ...>; new: <this turn's texts | ...>` (the channels' trigger tests).
 */
export const contextEcho = Layer.merge(
  Layer.effect(AgentExecutor, Effect.map(ConversationContext, (contexts) => AgentExecutor.of({
    allocate: () => Effect.sync(() => ExecutorId.make(`inproc:${randomUUID()}`)),
    execute: (input) =>
      Effect.gen(function* () {
        const { history } = yield* contexts.build(input, null)
        yield* input.reply(`context: ${history.filter((h) => h.role === "user").map((h) => h.text).join(" | ")}; new: ${input.messages.map((m) => m.text).join(" | ")}`)
      }),
    adopt: () => new TurnFailed({ code: "not_adoptable", reason: "in-process", retryable: true })
  }))),
  Layer.succeed(ExecutorLiveness, ExecutorLiveness.of({ isAlive: () => Effect.succeed(false) }))
)
