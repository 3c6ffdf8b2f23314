import { Cause, Clock, Context, Duration, Effect, Exit, Fiber, Layer, Option, Schedule, Scope } from "effect"
import { HostConfig } from "../config/HostConfig.js"
import { EventBus } from "../events/EventBus.js"
import { CloseFailure, RuntimeStartFailed } from "./errors.js"
import { type AnyConnectionRuntime, asNative, type NativeConnectionRuntime, type NativeRuntimeContext, type NativeRuntimeServices } from "../contracts/native-runtime.js"

/** One runtime as a plugin contributed it: a plugin's Promise runtime or a built-in's native one. */
export interface RuntimeEntry {
  readonly plugin: string
  readonly value: AnyConnectionRuntime
}

/** The runtimes to run, in their deterministic order (plugin order, then contribution order). */
export class ConnectionRuntimeSources extends Context.Tag("pynchy/ConnectionRuntimeSources")<ConnectionRuntimeSources, ReadonlyArray<RuntimeEntry>>() {}

export declare namespace RuntimeContexts {
  /** Builds the host-owned context a runtime gets; `release` removes its ephemeral bindings. */
  export interface Service {
    readonly make: (runtime: string) => Effect.Effect<{ readonly context: NativeRuntimeContext; readonly release: Effect.Effect<void> }>
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
const describeCause = (cause: Cause.Cause<unknown>) => {
  const e = Cause.squash(cause)
  return e instanceof Error ? e.message : typeof e === "object" && e !== null && "message" in e ? String(e.message) : String(e)
}

/**
 * Startup steps 7 and 8 of the seed, as a scoped layer (src/host/startup-steps.ts orders it after
 * step 4). Runtimes start one at a time, each in a scope of its own; each must report ready
 * before the next starts. If runtime k fails, k is closed, then every runtime started before it in
 * reverse, and the layer fails with every close failure attached. On
 * scope close every started runtime is closed in reverse; a failing close never skips the others.
 * Readiness is asked again every `readinessCheckMs`; a change is an event and a log line, and Host
 * publishes `health` in the live status.
 */
export class ConnectionRuntimes extends Context.Tag("pynchy/ConnectionRuntimes")<ConnectionRuntimes, ConnectionRuntimes.Service>() {
  static readonly make = Effect.gen(function* () {
    const { config } = yield* HostConfig
    const entries = yield* ConnectionRuntimeSources
    const contexts = yield* RuntimeContexts
    const bus = yield* EventBus
    const services = yield* Effect.context<NativeRuntimeServices>()
    const limits = config.limits
    interface Started {
      readonly plugin: string
      readonly runtime: NativeConnectionRuntime
      readonly scope: Scope.CloseableScope
      readonly release: Effect.Effect<void>
    }
    const started: Array<Started> = []
    const health = new Map<string, RuntimeHealth>()

    const closeOne = ({ plugin, release, runtime, scope }: Started) =>
      Effect.gen(function* () {
        // The close runs in a fiber of its own, so the deadline can abandon it (a finalizer is
        // uninterruptible); the rest of the close stays protected from the shutdown's interruption.
        const closing = yield* Effect.forkDaemon(Effect.exit(Scope.close(scope, Exit.void)))
        const exit = yield* Fiber.join(closing).pipe(
          Effect.interruptible,
          Effect.timeoutFail({ duration: Duration.millis(limits.runtimeCloseTimeoutMs), onTimeout: () => "timeout" as const }),
          Effect.either,
          Effect.ensuring(release)
        )
        if (exit._tag === "Right" && Exit.isSuccess(exit.right)) {
          yield* Effect.logInfo("runtime closed").pipe(Effect.annotateLogs({ runtime: runtime.name }))
          return Option.none<CloseFailure>()
        }
        const timeout = exit._tag === "Left"
        return Option.some(CloseFailure.make({
          runtime: runtime.name,
          plugin,
          code: timeout ? "close_timeout" : "close_failed",
          reason: timeout ? `no answer within ${limits.runtimeCloseTimeoutMs} ms` : Exit.isFailure(exit.right) ? describeCause(exit.right.cause) : "failed"
        }))
      })

    /** Closes what is started, newest first; every close runs whatever the others do. */
    const closeStarted = Effect.gen(function* () {
      const failures: Array<CloseFailure> = []
      const closed: Array<string> = []
      while (started.length > 0) {
        const one = started.pop()!
        health.delete(one.runtime.name)
        closed.push(one.runtime.name)
        const failure = yield* closeOne(one)
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
        const runtime = asNative(entry.value)
        const name = runtime.name
        const { context, release } = yield* contexts.make(name)
        const scope = yield* Scope.make()
        const one: Started = { plugin: entry.plugin, runtime, scope, release }
        const fail = (code: RuntimeStartFailed["code"], reason: string) =>
          Effect.gen(function* () {
            // k first, then everything before it in reverse.
            started.push(one)
            const { closed, failures } = yield* closeStarted
            return yield* new RuntimeStartFailed({ runtime: name, plugin: entry.plugin, code, reason, closed, closeFailures: failures })
          })
        const start = yield* runtime.start(context).pipe(
          Scope.extend(scope),
          Effect.provide(services),
          Effect.sandbox,
          Effect.mapError(describeCause),
          Effect.timeoutFail({ duration: Duration.millis(limits.runtimeStartTimeoutMs), onTimeout: () => "timeout" as const }),
          Effect.either
        )
        if (start._tag === "Left") {
          return yield* fail(start.left === "timeout" ? "start_timeout" : "start_failed", start.left === "timeout" ? `no answer within ${limits.runtimeStartTimeoutMs} ms` : start.left)
        }
        const ready = yield* runtime.isReady.pipe(
          Effect.flatMap((r) => (r ? Effect.void : Effect.fail("not ready yet"))),
          Effect.retry(Schedule.spaced(READY_POLL)),
          Effect.timeoutFail({ duration: Duration.millis(limits.runtimeReadyTimeoutMs), onTimeout: () => "timeout" as const }),
          Effect.either
        )
        if (ready._tag === "Left") return yield* fail("ready_timeout", `not ready within ${limits.runtimeReadyTimeoutMs} ms`)
        started.push(one)
        health.set(name, { name, plugin: entry.plugin, ready: true, since: yield* Clock.currentTimeMillis })
        yield* Effect.logInfo("runtime ready").pipe(Effect.annotateLogs({ runtime: name, plugin: entry.plugin }))
        yield* bus.publish({ type: "runtime.ready", runtime: name, plugin: entry.plugin })
      })

    yield* Effect.forEach(entries, startOne, { discard: true })

    // isReady is live: keep asking, and record when an answer changes.
    const check = Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      for (const { plugin, runtime } of started) {
        const before = health.get(runtime.name)
        const ready = yield* runtime.isReady.pipe(Effect.catchAllCause(() => Effect.succeed(false)))
        if (before !== undefined && before.ready !== ready) {
          health.set(runtime.name, { ...before, ready, since: now })
          yield* bus.publish({ type: ready ? "runtime.ready" : "runtime.unready", runtime: runtime.name, plugin })
          yield* (ready ? Effect.logInfo("runtime ready again") : Effect.logWarning("runtime not ready")).pipe(Effect.annotateLogs({ runtime: runtime.name }))
        }
      }
    })
    if (started.length > 0) yield* Effect.forkScoped(Effect.repeat(check, Schedule.spaced(Duration.millis(limits.readinessCheckMs))))

    return ConnectionRuntimes.of({ health: Effect.sync(() => [...health.values()]) })
  })

  static readonly layer = Layer.scoped(ConnectionRuntimes, ConnectionRuntimes.make)
}
