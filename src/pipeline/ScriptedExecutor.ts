import { Config, Duration, Effect, Layer } from "effect"
import { randomUUID } from "node:crypto"
import { ExecutorId } from "../domain/ids.js"
import { AgentExecutor, ExecutorLiveness, TurnFailed } from "./AgentExecutor.js"

/**
 * A deterministic in-process agent, for tests and offline demos: one reply per claimed message,
 * `echo: <text>`. A message whose text starts with `!fail` fails the attempt (retryable), and
 * `!fatal` fails for good. Its executors never outlive the process.
 */
export interface ScriptedOptions {
  /** Delay before each reply (lets crash tests land inside a turn). */
  readonly replyDelay: Duration.Duration
}

const make = (options: ScriptedOptions) => {
  const executor = AgentExecutor.of({
    allocate: () => Effect.sync(() => ExecutorId.make(`inproc:${randomUUID()}`)),
    execute: (input) =>
      Effect.forEach(input.messages, (m) =>
        Effect.gen(function* () {
          if (m.text.startsWith("!fatal")) return yield* new TurnFailed({ code: "scripted_fatal", reason: "asked to fail", retryable: false })
          if (m.text.startsWith("!fail")) return yield* new TurnFailed({ code: "scripted_failure", reason: "asked to fail", retryable: true })
          if (Duration.toMillis(options.replyDelay) > 0) yield* Effect.sleep(options.replyDelay)
          yield* input.reply(`echo: ${m.text}`)
        }), { discard: true }),
    adopt: () => new TurnFailed({ code: "not_adoptable", reason: "in-process executors do not survive a restart", retryable: true })
  })
  return Layer.merge(
    Layer.succeed(AgentExecutor, executor),
    Layer.succeed(ExecutorLiveness, ExecutorLiveness.of({ isAlive: () => Effect.succeed(false) }))
  )
}

export const layer = (options: ScriptedOptions = { replyDelay: Duration.zero }) => make(options)

/** Reads `PYNCHY_SCRIPTED_DELAY_MS` (default 0). */
export const layerConfig = Layer.unwrapEffect(
  Effect.map(Config.withDefault(Config.integer("PYNCHY_SCRIPTED_DELAY_MS"), 0), (ms) => make({ replyDelay: Duration.millis(ms) }))
)
