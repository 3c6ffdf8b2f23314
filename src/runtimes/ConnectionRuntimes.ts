import { Clock, Context, Duration, Effect, Layer, Option, Schedule } from "effect"
import { HostConfig } from "../config/HostConfig.js"
import { HostStore } from "../db/HostStore.js"
import { LiveStatus } from "../host/LiveStatus.js"
import type { ConnectionRuntime, ConnectionRuntimeContext } from "./connection-runtime-contract.js"
import { CloseFailure, RuntimeStartFailed } from "./errors.js"

/** One runtime as a plugin contributed it. */
export interface RuntimeEntry {
  readonly plugin: string
  readonly value: ConnectionRuntime
}

/** The runtimes to run, in their deterministic order (plugin order, then contribution order). */
export class ConnectionRuntimeSources extends Context.Tag("pynchy/ConnectionRuntimeSources")<ConnectionRuntimeSources, ReadonlyArray<RuntimeEntry>>() {}

export declare namespace RuntimeContexts {
  /** Builds the host-owned context a runtime gets; `release` removes its ephemeral bindings. */
  export interface Service {
    readonly make: (runtime: string) => Effect.Effect<{ readonly context: ConnectionRuntimeContext; readonly release: Effect.Effect<void> }>
  }
}
export class RuntimeContexts extends Context.Tag("pynchy/RuntimeContexts")<RuntimeContexts, RuntimeContexts.Service>() {}

export interface RuntimeHealth {
  readonly name: string
  readonly plugin: string
  readonly ready: boolean
  readonly since: number
}

export declare namespace ConnectionRuntimes {
  /** The started runtimes (all ready when the layer is built) and their live health. */
  export interface Service {
    readonly health: Effect.Effect<ReadonlyArray<RuntimeHealth>>
  }
}

const READY_POLL = Duration.millis(10)
const describe = (e: unknown) => (e instanceof Error ? e.message : String(e))

/**
 * Startup steps 7 and 8 of the seed, as a scoped layer (src/host/startup-steps.ts orders it after
 * step 4). Runtimes start one at a time; each must report
 * ready before the next starts. If runtime k fails, k is closed, then every runtime started
 * before it in reverse, and the layer fails with every close failure attached. On scope close
 * every started runtime is closed in reverse; a failing close never skips the others.
 */
export class ConnectionRuntimes extends Context.Tag("pynchy/ConnectionRuntimes")<ConnectionRuntimes, ConnectionRuntimes.Service>() {
  static readonly make = Effect.gen(function* () {
    const { config } = yield* HostConfig
    const entries = yield* ConnectionRuntimeSources
    const contexts = yield* RuntimeContexts
    const limits = config.limits
    const started: Array<{ entry: RuntimeEntry; release: Effect.Effect<void> }> = []
    const health = new Map<string, RuntimeHealth>()

    const closeOne = (entry: RuntimeEntry, release: Effect.Effect<void>) =>
      Effect.tryPromise({ try: () => entry.value.close(), catch: describe }).pipe(
        // Only the wait on the promise is interruptible, so the deadline can abandon it; the rest
        // of the close stays protected from the shutdown's own interruption.
        Effect.interruptible,
        Effect.timeoutFail({ duration: Duration.millis(limits.runtimeCloseTimeoutMs), onTimeout: () => "timeout" as const }),
        Effect.ensuring(release),
        Effect.matchEffect({
          onSuccess: () => Effect.logInfo("runtime closed").pipe(Effect.annotateLogs({ runtime: entry.value.name }), Effect.as(Option.none<CloseFailure>())),
          onFailure: (e) => {
            const failure = CloseFailure.make({
              runtime: entry.value.name,
              plugin: entry.plugin,
              code: e === "timeout" ? "close_timeout" : "close_failed",
              reason: e === "timeout" ? `no answer within ${limits.runtimeCloseTimeoutMs} ms` : e
            })
            return Effect.succeed(Option.some(failure))
          }
        })
      )

    /** Closes what is started, newest first; every close runs whatever the others do. */
    const closeStarted = Effect.gen(function* () {
      const failures: Array<CloseFailure> = []
      const closed: Array<string> = []
      while (started.length > 0) {
        const { entry, release } = started.pop()!
        health.delete(entry.value.name)
        closed.push(entry.value.name)
        const failure = yield* closeOne(entry, release)
        if (Option.isSome(failure)) failures.push(failure.value)
      }
      return { closed, failures }
    })

    yield* Effect.addFinalizer(() =>
      Effect.gen(function* () {
        const { failures } = yield* closeStarted
        if (failures.length > 0) {
          yield* Effect.logError("connection runtimes failed to close").pipe(
            Effect.annotateLogs({ failures: failures.map((f) => `${f.runtime}: ${f.code}: ${f.reason}`).join("; ") })
          )
        }
      })
    )

    const startOne = (entry: RuntimeEntry) =>
      Effect.gen(function* () {
        const name = entry.value.name
        const { context, release } = yield* contexts.make(name)
        const fail = (code: RuntimeStartFailed["code"], reason: string) =>
          Effect.gen(function* () {
            // k first, then everything before it in reverse.
            started.push({ entry, release })
            const { closed, failures } = yield* closeStarted
            return yield* new RuntimeStartFailed({ runtime: name, plugin: entry.plugin, code, reason, closed, closeFailures: failures })
          })
        const start = yield* Effect.tryPromise({ try: () => entry.value.start(context), catch: describe }).pipe(
          Effect.timeoutFail({ duration: Duration.millis(limits.runtimeStartTimeoutMs), onTimeout: () => "timeout" as const }),
          Effect.either
        )
        if (start._tag === "Left") {
          return yield* fail(start.left === "timeout" ? "start_timeout" : "start_failed", start.left === "timeout" ? `no answer within ${limits.runtimeStartTimeoutMs} ms` : start.left)
        }
        const ready = yield* Effect.try(() => entry.value.isReady()).pipe(
          Effect.flatMap((r) => (r ? Effect.void : Effect.fail("not ready yet"))),
          Effect.retry(Schedule.spaced(READY_POLL)),
          Effect.timeoutFail({ duration: Duration.millis(limits.runtimeReadyTimeoutMs), onTimeout: () => "timeout" as const }),
          Effect.either
        )
        if (ready._tag === "Left") return yield* fail("ready_timeout", `not ready within ${limits.runtimeReadyTimeoutMs} ms`)
        started.push({ entry, release })
        health.set(name, { name, plugin: entry.plugin, ready: true, since: yield* Clock.currentTimeMillis })
        yield* Effect.logInfo("runtime ready").pipe(Effect.annotateLogs({ runtime: name, plugin: entry.plugin }))
      })

    yield* Effect.forEach(entries, startOne, { discard: true })

    const snapshot = Effect.sync(() => [...health.values()])
    // isReady is live: keep asking, publish the answers, and say when one changes.
    const store = yield* HostStore
    const status = yield* LiveStatus
    const check = Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      for (const { entry } of started) {
        const before = health.get(entry.value.name)
        const ready = (() => {
          try {
            return entry.value.isReady() === true
          } catch {
            return false
          }
        })()
        if (before !== undefined && before.ready !== ready) {
          health.set(entry.value.name, { ...before, ready, since: now })
          yield* store.appendEvent(ready ? "runtime.ready" : "runtime.unready", { runtime: entry.value.name, plugin: entry.plugin })
          yield* (ready ? Effect.logInfo("runtime ready again") : Effect.logWarning("runtime not ready")).pipe(Effect.annotateLogs({ runtime: entry.value.name }))
        }
      }
      yield* status.setSection("runtimes", yield* snapshot)
    })
    yield* status.setSection("runtimes", yield* snapshot)
    if (started.length > 0) yield* Effect.forkScoped(Effect.repeat(check, Schedule.spaced(Duration.millis(limits.readinessCheckMs))))

    return ConnectionRuntimes.of({ health: snapshot })
  })

  static readonly layer = Layer.scoped(ConnectionRuntimes, ConnectionRuntimes.make)
}
