import { Effect, type Scope } from "effect"

/**
 * At most one run per key at a time; a wake during a run asks for exactly one more run after it.
 * The state changes are synchronous, so no wake is lost between "finished" and "exited".
 */
export const keyedRunner = <K, R>(scope: Scope.Scope, run: (key: K) => Effect.Effect<void, never, R>) => {
  const state = new Map<K, "running" | "again">()
  const loop = (key: K): Effect.Effect<void, never, R> =>
    Effect.gen(function* () {
      while (true) {
        yield* run(key).pipe(Effect.catchAllDefect((d) => Effect.logError("keyed run died", d)))
        const again = yield* Effect.sync(() => {
          if (state.get(key) === "again") {
            state.set(key, "running")
            return true
          }
          state.delete(key)
          return false
        })
        if (!again) return
      }
    })
  const wake = (key: K): Effect.Effect<void, never, R> =>
    Effect.suspend(() => {
      if (state.has(key)) {
        state.set(key, "again")
        return Effect.void
      }
      state.set(key, "running")
      return Effect.asVoid(Effect.forkIn(loop(key), scope))
    })
  return { wake, active: () => state.size }
}
