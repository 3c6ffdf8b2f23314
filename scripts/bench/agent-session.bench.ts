/**
 * What the agent-session seam costs per call: `registry.inspect` (lookup, the deadline as
 * `Effect.timeout` with an AbortSignal, the answer normalized into a status) against awaiting the
 * same callback directly, in the same run. The callback answers at once, so the difference is all
 * seam. Twice: a callback that never reads `opts.signal`, and one that does. Two Effect floors in
 * the same run place it: `Effect.tryPromise` alone (Effect's async boundary), and with
 * `Effect.timeoutFail` (the deadline the contract asks for, without lookup, signal or decode).
 */
import { Duration, Effect } from "effect"
import { AgentSessionRuntimeRegistry } from "../../src/runtimes/agent-session/AgentSessionRuntimeRegistry.js"
import type { CallOptions, SessionRef } from "../../src/runtimes/agent-session/runtime.js"
import type { Row } from "./types.js"
import { median } from "./stats.js"

const CALLS = 20_000
const WARMUP = 5_000
const ROUNDS = 5
const GOAL = "≤ 100 µs"


const answer = { state: "idle", alive: true, latestResponse: "ok", lastEventAt: "2026-12-01T10:00:00.000Z" }
const plain = async (_ref: SessionRef, _opts: CallOptions) => answer
const readsSignal = async (_ref: SessionRef, opts: CallOptions) => (opts.signal.aborted ? undefined : answer)
const refOf = (runtime: string): SessionRef => ({ runtime, sessionId: "s1" })

/**
 * Each loop is timed twice: wall time, and the process's CPU time (user + system, GC threads
 * included). On a machine other work is loading, wall time counts the waits for a core; CPU time
 * is what the calls themselves cost, and stays comparable between runs.
 */
interface PerCall { readonly wall: number; readonly cpu: number }
const startClocks = () => ({ wall: performance.now(), cpu: process.cpuUsage() })
const perCall = (start: ReturnType<typeof startClocks>, calls: number): PerCall => {
  const cpu = process.cpuUsage(start.cpu)
  return { wall: ((performance.now() - start.wall) * 1000) / calls, cpu: (cpu.user + cpu.system) / calls }
}

/** µs per awaited call of the bare callback (one options object for all calls: no deadline). */
const bare = async (callback: (ref: SessionRef, opts: CallOptions) => Promise<unknown>, calls: number) => {
  const ref = refOf("bare")
  const opts: CallOptions = { now: 0, signal: new AbortController().signal, timeoutMs: 60_000 }
  const start = startClocks()
  for (let i = 0; i < calls; i++) await callback(ref, opts)
  return perCall(start, calls)
}

/** µs per `registry.inspect`, all calls inside one Effect program (as the host makes them). */
const viaRegistry = (registry: AgentSessionRuntimeRegistry.Service, runtimeId: string, calls: number) =>
  Effect.gen(function* () {
    const ref = refOf(runtimeId)
    const start = startClocks()
    for (let i = 0; i < calls; i++) yield* registry.inspect(ref)
    return perCall(start, calls)
  })

/** µs per Effect.tryPromise of the callback: Effect's own async boundary, no deadline, no decode. */
const viaTryPromise = (calls: number) =>
  Effect.gen(function* () {
    const ref = refOf("bare")
    const opts: CallOptions = { now: 0, signal: new AbortController().signal, timeoutMs: 60_000 }
    const call = Effect.tryPromise({ try: () => plain(ref, opts), catch: () => "failed" as const })
    const start = startClocks()
    for (let i = 0; i < calls; i++) yield* call
    return perCall(start, calls)
  })

/** µs per Effect.tryPromise under Effect.timeoutFail: the deadline alone, no signal, no decode. */
const viaTimeoutFloor = (calls: number) =>
  Effect.gen(function* () {
    const ref = refOf("bare")
    const opts: CallOptions = { now: 0, signal: new AbortController().signal, timeoutMs: 60_000 }
    const call = Effect.tryPromise({ try: () => plain(ref, opts), catch: () => "failed" as const }).pipe(
      Effect.timeoutFail({ duration: Duration.millis(60_000), onTimeout: () => "timeout" as const })
    )
    const start = startClocks()
    for (let i = 0; i < calls; i++) yield* call
    return perCall(start, calls)
  })

export default async function (): Promise<Array<Row>> {
  return Effect.runPromise(
    Effect.gen(function* () {
      const registry = yield* AgentSessionRuntimeRegistry
      yield* registry.register({ id: "plain", provider: "bench", inspect: plain })
      yield* registry.register({ id: "signal", provider: "bench", inspect: readsSignal })
      for (const id of ["plain", "signal"]) {
        const check = yield* registry.inspect(refOf(id))
        if (check.state !== "idle") throw new Error(`the bench runtime '${id}' answered ${check.state}/${check.error?.code}`)
      }
      const keys = ["plain", "signal", "barePlain", "bareSignal", "effect", "deadline"] as const
      const samples = Object.fromEntries(keys.map((k) => [k, [] as Array<PerCall>])) as Record<(typeof keys)[number], Array<PerCall>>
      for (let r = -1; r < ROUNDS; r++) {
        const n = r < 0 ? WARMUP : CALLS
        const round = {
          plain: yield* viaRegistry(registry, "plain", n),
          barePlain: yield* Effect.promise(() => bare(plain, n)),
          signal: yield* viaRegistry(registry, "signal", n),
          bareSignal: yield* Effect.promise(() => bare(readsSignal, n)),
          effect: yield* viaTryPromise(n),
          deadline: yield* viaTimeoutFloor(n)
        }
        if (r < 0) continue
        for (const k of keys) samples[k].push(round[k])
      }
      const medians = (of: keyof PerCall) => Object.fromEntries(keys.map((k) => [k, median(samples[k].map((x) => x[of]))])) as Record<(typeof keys)[number], number>
      const m = medians("wall")
      const c = medians("cpu")
      return [
        { name: "registry.inspect with deadline, per call", value: m.plain, unit: "µs", baseline: { name: "bare awaited callback", value: m.barePlain } },
        { name: "registry call overhead (with deadline - bare)", value: m.plain - m.barePlain, unit: "µs", goal: GOAL },
        {
          name: "registry.inspect with deadline, callback reads opts.signal",
          value: m.signal,
          unit: "µs",
          baseline: { name: "bare awaited callback", value: m.bareSignal }
        },
        { name: "registry call overhead, callback reads opts.signal", value: m.signal - m.bareSignal, unit: "µs", goal: GOAL },
        { name: "registry.inspect with deadline (vs Effect's async floor)", value: m.plain, unit: "µs", baseline: { name: "Effect.tryPromise, no deadline", value: m.effect } },
        {
          name: "registry.inspect with deadline (vs the deadline's own floor)",
          value: m.plain,
          unit: "µs",
          baseline: { name: "Effect.tryPromise + Effect.timeoutFail", value: m.deadline }
        },
        { name: "CPU time: registry.inspect with deadline, per call", value: c.plain, unit: "µs", baseline: { name: "bare awaited callback", value: c.barePlain } },
        { name: "CPU time: registry call overhead (with deadline - bare)", value: c.plain - c.barePlain, unit: "µs", goal: GOAL },
        { name: "CPU time: registry call overhead, callback reads opts.signal", value: c.signal - c.bareSignal, unit: "µs", goal: GOAL },
        {
          name: "CPU time: registry.inspect with deadline (vs the deadline's own floor)",
          value: c.plain,
          unit: "µs",
          baseline: { name: "Effect.tryPromise + Effect.timeoutFail", value: c.deadline }
        }
      ]
    }).pipe(Effect.provide(AgentSessionRuntimeRegistry.layer))
  )
}
