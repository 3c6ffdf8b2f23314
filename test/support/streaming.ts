/**
 * An in-process executor that streams: for each claimed message it sends the reply
 * `echo: <text>` (or what `replyOf` makes of the text) as progress deltas (in `pieces` parts), then records it with `reply`. `hold`,
 * when given, is awaited between the deltas and the reply (a test decides when the turn ends).
 * A message starting with `revise ` gets a final reply that differs from what was streamed (as
 * when a model's streamed text is not its final answer): `<streamed> (revised)`.
 */
import { Effect, Layer } from "effect"
import { randomUUID } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { ExecutorId } from "../../src/domain/ids.js"
import { AgentExecutor, ExecutorLiveness, TurnFailed } from "../../src/pipeline/AgentExecutor.js"
import { eventually } from "./eventually.js"

export interface StreamingOptions {
  readonly pieces?: number
  readonly hold?: (text: string) => Promise<void>
  /** The reply to a message's text (default `echo: <text>`). */
  readonly replyOf?: (text: string) => string
}

export const splitIn = (text: string, pieces: number): Array<string> => {
  const size = Math.ceil(text.length / pieces)
  const out: Array<string> = []
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size))
  return out
}

/** For a child process (the tmux chat): a turn is held until the file `release-<text>` exists in `dir`. */
export const holdUntilFile = (dir: string) => async (text: string) => {
  const file = path.join(dir, `release-${text.replace(/[^A-Za-z0-9]/g, "_")}`)
  await Effect.runPromise(eventually(() => fs.existsSync(file) || undefined, { label: `the release file for '${text}'`, timeout: "10 minutes" }))
}

export const streamingExecutor = (options: StreamingOptions = {}) =>
  Layer.merge(
    Layer.succeed(AgentExecutor, AgentExecutor.of({
      allocate: () => Effect.sync(() => ExecutorId.make(`inproc:${randomUUID()}`)),
      execute: (input) =>
        Effect.forEach(input.messages, (m) =>
          Effect.gen(function* () {
            const text = options.replyOf?.(m.text) ?? `echo: ${m.text}`
            for (const piece of splitIn(text, options.pieces ?? 3)) yield* input.progress({ type: "delta", text: piece })
            if (options.hold) yield* Effect.promise(() => options.hold!(m.text))
            yield* input.reply(m.text.startsWith("revise ") ? `${text} (revised)` : text)
          }), { discard: true }),
      adopt: () => new TurnFailed({ code: "not_adoptable", reason: "in-process executors do not survive a restart", retryable: true })
    })),
    Layer.succeed(ExecutorLiveness, ExecutorLiveness.of({ isAlive: () => Effect.succeed(false) }))
  )
