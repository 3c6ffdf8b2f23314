/**
 * Streaming, host side: from a turn's `progress` delta (what serve-runner does with a `text_delta`
 * line) to the channel's `progress` call, through the real Channels feed (queue + sending fiber).
 * Baseline: the same callback called directly. Not yet measured: IPC decode before it and the
 * gateway/core before that (the cores' streaming lands separately).
 */
import { Effect, Exit, Scope } from "effect"
import type { ProgressEvent } from "../../src/contracts/channel.js"
import { Channels } from "../../src/pipeline/Channels.js"
import { median } from "./stats.js"
import type { Row } from "./types.js"

const RUNS = 2_000

export default async (): Promise<Array<Row>> => {
  const feedMs: Array<number> = []
  const directMs: Array<number> = []
  await Effect.runPromise(Effect.scoped(Effect.gen(function* () {
    const channels = yield* Channels.make
    let resolve: (() => void) | undefined
    let t0 = 0
    let took = 0
    const onProgress = (e: ProgressEvent) => {
      if (e.type !== "delta") return
      took = performance.now() - t0
      resolve?.()
    }
    yield* Effect.asVoid(channels.bind({ name: "bench", idempotentResends: true, send: async () => undefined, progress: onProgress }))
    for (let i = 0; i < RUNS; i++) {
      const scope = yield* Scope.make()
      const feed = yield* channels.progress({ conversationId: "bench:r", connection: "bench", place: "r", turnId: i }).pipe(Scope.extend(scope))
      const seen = new Promise<void>((r) => (resolve = r))
      t0 = performance.now()
      yield* feed.delta(`t${i}:0`, "first")
      yield* Effect.promise(() => seen)
      feedMs.push(took)
      yield* Scope.close(scope, Exit.void)
      t0 = performance.now()
      onProgress({ conversationId: "bench:r", connection: "bench", place: "r", turnId: i, type: "delta", replyKey: "k", text: "first" })
      directMs.push(took)
    }
  })))
  const warm = (xs: Array<number>) => xs.slice(200)
  return [{
    name: "first delta: turn progress → channel progress, p50",
    value: median(warm(feedMs)),
    unit: "ms",
    baseline: { name: "direct callback", value: median(warm(directMs)) },
    goal: "≤ 5 ms (over the upstream's first byte)"
  }]
}
