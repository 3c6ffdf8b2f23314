/** Which container runtime a turn uses: the workspace's `sandbox.runtime`, else config `containerRuntime`; `auto` is bwrap where it works, else process. */
import { Effect } from "effect"
import { TurnFailed } from "../pipeline/AgentExecutor.js"
import type { SandboxRuntime } from "./runtime.js"

export const chooseRuntime = (
  wanted: string,
  runtimes: ReadonlyArray<SandboxRuntime>
): Effect.Effect<SandboxRuntime, TurnFailed> =>
  Effect.gen(function* () {
    const named = (name: string) => runtimes.find((r) => r.name === name)
    if (wanted !== "auto") {
      const r = named(wanted)
      if (r === undefined) {
        return yield* new TurnFailed({ code: "unknown_runtime", reason: `no container runtime named '${wanted}' (known: ${runtimes.map((r) => r.name).join(", ") || "none"})`, retryable: false })
      }
      return r
    }
    const bwrap = named("bwrap")
    if (bwrap !== undefined) {
      const ok = yield* Effect.promise(() => bwrap.available?.() ?? Promise.resolve({ ok: true }))
      if (ok.ok) return bwrap
    }
    const fallback = named("process")
    if (fallback === undefined) return yield* new TurnFailed({ code: "unknown_runtime", reason: "auto: neither bwrap nor process is registered", retryable: false })
    return fallback
  })
