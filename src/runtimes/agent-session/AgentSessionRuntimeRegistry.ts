import { Clock, Config, Context, Duration, Effect, Either, Layer, Option, Runtime } from "effect"
import type { AgentSessionStatus } from "../../domain/attachment.js"
import { CallFailed, CallTimedOut, type RuntimeDefinitionInvalid } from "./errors.js"
import { normalizeObservation, sessionNotFound, unavailableStatus } from "./observation.js"
import {
  type CallOptions,
  type ContinueRequest,
  type DetachRequest,
  type Operation,
  readDefinition,
  type RegisteredRuntime,
  type RuntimeSummary,
  type SessionRef
} from "./runtime.js"

/** The deadline of every callback unless a call passes its own. */
export const DEFAULT_CALL_TIMEOUT_MS = 60_000
const MAX_TIMER_MS = 2_147_483_647

export interface CallOverrides {
  /** This call's deadline in milliseconds (default: `AGENT_SESSION_CALL_TIMEOUT_MS`, 60 s). */
  readonly timeoutMs?: number | undefined
}

/** What a host module receives: `registry.register({ id, provider, inspect, continue?, detach? })`. */
export interface Registrar {
  /** Returns the runtime; throws `RuntimeDefinitionInvalid` only for a malformed id. A second registration of an id replaces the first. */
  readonly register: (definition: unknown) => RuntimeSummary
}

export declare namespace AgentSessionRuntimeRegistry {
  /**
   * The runtimes this process can reach. Up to three callbacks per runtime, each addressing ONE
   * known session; there is no list and no spawn. Every call runs under a deadline and answers a
   * normalized status: it never fails and never hangs past its deadline.
   */
  export interface Service {
    /** Adds a runtime, or replaces the one registered under the same id (logged either way). */
    readonly register: (definition: unknown) => Effect.Effect<RuntimeSummary, RuntimeDefinitionInvalid>
    /** The same, for plain JavaScript modules (synchronous; throws the typed error when refused). */
    readonly registrar: Registrar
    readonly runtimes: Effect.Effect<ReadonlyArray<RuntimeSummary>>
    readonly get: (runtimeId: string) => Effect.Effect<Option.Option<RuntimeSummary>>
    /** The default deadline in milliseconds. */
    readonly callTimeoutMs: number
    /**
     * The session's normalized status. `unavailable` with an error code when it cannot be asked:
     * `unknown_runtime`, `unsupported_operation`, `session_not_found` (the callback answered
     * null), `inspect_timeout`, `inspect_failed` (it threw or rejected).
     */
    readonly inspect: (ref: SessionRef, opts?: CallOverrides) => Effect.Effect<AgentSessionStatus>
    /** Hands the runtime `{ prompt }`; as inspect, codes `continue_*`. */
    readonly continue: (ref: SessionRef, request: ContinueRequest, opts?: CallOverrides) => Effect.Effect<AgentSessionStatus>
    /** Hands the runtime `{ reason }`; as inspect, codes `detach_*`. */
    readonly detach: (ref: SessionRef, request: DetachRequest, opts?: CallOverrides) => Effect.Effect<AgentSessionStatus>
  }
}

const describe = (e: unknown): string => {
  const text = e instanceof Error ? `${e.name}: ${e.message}` : String(e)
  return text.length > 200 ? `${text.slice(0, 200)}…` : text
}

const summary = (r: RegisteredRuntime): RuntimeSummary => ({ id: r.id, provider: r.provider, capabilities: r.capabilities })

/**
 * The callback's own frozen copy, its provider the registered runtime's (a ref cannot claim
 * another). Built member by member: on Node 20 `{ ...ref, provider }` over a fresh ref costs
 * microseconds a member (see `normalizeObservation`).
 */
const boundRef = (ref: SessionRef, rt: RegisteredRuntime): SessionRef => {
  const out: { -readonly [K in keyof SessionRef]: SessionRef[K] } = { runtime: ref.runtime, sessionId: ref.sessionId }
  if (rt.provider !== "") out.provider = rt.provider
  if (ref.providerSessionId !== undefined) out.providerSessionId = ref.providerSessionId
  if (ref.host !== undefined) out.host = ref.host
  if (ref.remoteUrl !== undefined) out.remoteUrl = ref.remoteUrl
  if (ref.metadata !== undefined) out.metadata = Object.freeze(Object.assign({}, ref.metadata))
  if (ref.lastKnownState !== undefined) out.lastKnownState = ref.lastKnownState
  return Object.freeze(out)
}

/**
 * Awaits one callback as an interruptible Effect. Its `opts.signal` is made on first read (an
 * AbortSignal costs 10-20 µs to create on Node 20, and most callbacks never look at it) and is
 * aborted when the call's fiber is interrupted, as `Effect.timeout` does at the deadline; a
 * signal first read after that comes already aborted.
 */
const awaitCallback = (
  invoke: (opts: CallOptions) => unknown,
  now: number,
  timeoutMs: number,
  onError: (e: unknown) => CallFailed
): Effect.Effect<unknown, CallFailed> =>
  Effect.async<unknown, CallFailed>((resume) => {
    let controller: AbortController | undefined
    let abandoned = false
    const signalOf = () => {
      if (controller === undefined) {
        controller = new AbortController()
        if (abandoned) controller.abort()
      }
      return controller.signal
    }
    const opts: CallOptions = Object.freeze({
      now,
      timeoutMs,
      get signal() {
        return signalOf()
      }
    })
    try {
      Promise.resolve(invoke(opts)).then(
        (answer) => resume(Effect.succeed(answer)),
        (e) => resume(Effect.fail(onError(e)))
      )
    } catch (e) {
      resume(Effect.fail(onError(e)))
    }
    return Effect.sync(() => {
      abandoned = true
      controller?.abort()
    })
  })

export class AgentSessionRuntimeRegistry extends Context.Tag("pynchy/AgentSessionRuntimeRegistry")<
  AgentSessionRuntimeRegistry,
  AgentSessionRuntimeRegistry.Service
>() {
  static readonly make = Effect.gen(function* () {
    const configured = yield* Config.integer("AGENT_SESSION_CALL_TIMEOUT_MS").pipe(
      Config.validate({ message: `must be a number of milliseconds between 1 and ${MAX_TIMER_MS}`, validation: (n) => n > 0 && n <= MAX_TIMER_MS }),
      Config.withDefault(DEFAULT_CALL_TIMEOUT_MS)
    )
    const runtime = yield* Effect.runtime<never>()
    const registered = new Map<string, RegisteredRuntime>()

    const register = Effect.fn("AgentSessionRuntimeRegistry.register")(function* (definition: unknown) {
      const read = readDefinition(definition)
      if (Either.isLeft(read)) {
        yield* Effect.logWarning("agent-session runtime registration refused: malformed id").pipe(
          Effect.annotateLogs({ runtime: read.left.runtimeId ?? "(none)", reason: read.left.message })
        )
        return yield* read.left
      }
      const entry = read.right
      const replaced = registered.get(entry.id)
      registered.set(entry.id, entry)
      const annotations = { runtime: entry.id, provider: entry.provider, ...entry.capabilities }
      if (replaced !== undefined) {
        yield* Effect.logWarning("agent-session runtime replaced: a second registration of the same id wins").pipe(
          Effect.annotateLogs({ ...annotations, replacedProvider: replaced.provider })
        )
      } else {
        yield* Effect.logInfo("agent-session runtime registered").pipe(Effect.annotateLogs(annotations))
      }
      if (!entry.capabilities.inspect) {
        yield* Effect.logWarning("agent-session runtime has no inspect callback: every inspect answers unsupported_operation").pipe(
          Effect.annotateLogs({ runtime: entry.id })
        )
      }
      return summary(entry)
    })

    // Modules are plain JavaScript calling synchronously: this is the Promise-facing edge.
    const registrar: Registrar = {
      register: (definition) => {
        const result = Runtime.runSync(runtime)(Effect.either(register(definition)))
        if (Either.isLeft(result)) throw result.left
        return result.right
      }
    }

    const deadlineOf = (opts: CallOverrides | undefined) => {
      const t = opts?.timeoutMs
      // Node timers overflow past 2^31-1 ms and would fire at once.
      return typeof t === "number" && Number.isFinite(t) && t > 0 ? Math.min(t, MAX_TIMER_MS) : configured
    }

    const logCall = (runtimeId: string, op: Operation, code: string) =>
      Effect.logWarning("agent-session runtime call answered unavailable").pipe(Effect.annotateLogs({ runtime: runtimeId, op, code }))

    /**
     * One callback under `Effect.timeout`: when the deadline passes the call's fiber is
     * interrupted, which aborts the callback's `opts.signal`. A callback that ignores its signal
     * is simply no longer awaited.
     */
    const call = (op: Operation, ref: SessionRef, overrides: CallOverrides | undefined, args: (opts: CallOptions) => ReadonlyArray<unknown>) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const rt = registered.get(ref.runtime)
        if (rt === undefined) {
          return Effect.succeed(unavailableStatus(
            ref,
            now,
            { code: "unknown_runtime", message: `no runtime '${ref.runtime}' is registered` },
            `This host cannot ${op} '${ref.runtime}' sessions; the session itself may be fine.`
          ))
        }
        const callback = rt.callbacks[op]
        if (callback === undefined) {
          return Effect.succeed(unavailableStatus(
            ref,
            now,
            { code: "unsupported_operation", message: `runtime '${rt.id}' does not support ${op}` },
            `Runtime '${rt.id}' registered no ${op} callback.`
          ))
        }
        const bound = boundRef(ref, rt)
        const timeoutMs = deadlineOf(overrides)
        const failed = (e: unknown) => new CallFailed({ op, runtimeId: rt.id, reason: describe(e) })
        return awaitCallback((opts) => callback(bound, ...args(opts)), now, timeoutMs, failed).pipe(
          Effect.timeoutFail({ duration: Duration.millis(timeoutMs), onTimeout: () => new CallTimedOut({ op, runtimeId: rt.id, timeoutMs }) }),
          // A getter that throws inside an answer is the callback failing, not the host.
          Effect.flatMap((answer) =>
            Effect.try({
              try: () => (answer === null || answer === undefined ? sessionNotFound(bound, now) : normalizeObservation(bound, answer, now)),
              catch: (e) => new CallFailed({ op, runtimeId: rt.id, reason: `unreadable answer: ${describe(e)}` })
            })
          ),
          Effect.catchTags({
            CallTimedOut: (e) =>
              Effect.as(
                logCall(rt.id, op, `${op}_timeout`),
                unavailableStatus(bound, now, { code: `${op}_timeout`, message: `no answer within ${e.timeoutMs} ms` }, `Runtime '${rt.id}' did not answer the ${op} in time and was abandoned; the session itself may be fine.`)
              ),
            CallFailed: (e) =>
              Effect.as(
                logCall(rt.id, op, `${op}_failed`),
                unavailableStatus(bound, now, { code: `${op}_failed`, message: e.reason }, `Runtime '${rt.id}' could not ${op} this session.`)
              )
          })
        )
      })

    return AgentSessionRuntimeRegistry.of({
      register,
      registrar,
      runtimes: Effect.sync(() => [...registered.values()].map(summary)),
      get: (runtimeId) => Effect.sync(() => Option.map(Option.fromNullable(registered.get(runtimeId)), summary)),
      callTimeoutMs: configured,
      inspect: (ref, opts) => call("inspect", ref, opts, (o) => [o]),
      continue: (ref, request, opts) => call("continue", ref, opts, (o) => [Object.freeze({ prompt: request.prompt }), o]),
      detach: (ref, request, opts) => call("detach", ref, opts, (o) => [Object.freeze({ reason: request.reason }), o])
    })
  })

  /** An empty registry: runtimes are added with `register` (or by `loadAgentSessionRuntimes`). */
  static readonly layer = Layer.effect(AgentSessionRuntimeRegistry, AgentSessionRuntimeRegistry.make)
}
