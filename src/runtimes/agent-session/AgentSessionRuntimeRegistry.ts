import { Config, Context, Effect, Either, Layer, Option, Runtime, Schema } from "effect"
import { AgentSessionStatus } from "../../domain/attachment.js"
import { problemsOf } from "../../domain/problems.js"
import { type Deadline, makeDeadlines } from "./deadlines.js"
import { CallFailed, CallMalformed, CallTimedOut, DuplicateRuntime, type RuntimeDefinitionInvalid } from "./errors.js"
import {
  type AgentSessionRuntimeDefinition,
  type CallOptions,
  type Capabilities,
  type ContinueRequest,
  decodeDefinition,
  type Operation,
  type RegisteredRuntime,
  type SessionRef
} from "./runtime.js"

/** The deadline of every callback unless a call passes its own. */
export const DEFAULT_CALL_TIMEOUT_MS = 60_000
const MAX_TIMER_MS = 2_147_483_647

export interface CallOverrides {
  /** This call's deadline in milliseconds (default: `AGENT_SESSION_CALL_TIMEOUT_MS`, 60 s). */
  readonly timeoutMs?: number | undefined
}

export interface RuntimeSummary {
  readonly id: string
  readonly provider: string
  readonly capabilities: Capabilities
}

/** What a host module receives: `registry.register({ id, provider, inspect, continue?, detach? })`. */
export interface Registrar {
  /** Returns the derived capabilities; throws `DuplicateRuntime` or `RuntimeDefinitionInvalid` when refused. */
  readonly register: (definition: AgentSessionRuntimeDefinition) => Capabilities
}

export declare namespace AgentSessionRuntimeRegistry {
  /**
   * The runtimes this process can reach. Three callbacks per runtime, each addressing ONE known
   * session; there is no list and no spawn. Every call runs under a deadline and answers a status:
   * it never fails and never hangs past its deadline.
   */
  export interface Service {
    /** Adds a runtime. A duplicate id is refused (and logged); the earlier registration stays. */
    readonly register: (definition: unknown) => Effect.Effect<Capabilities, DuplicateRuntime | RuntimeDefinitionInvalid>
    /** The same, for plain JavaScript modules (synchronous; throws the typed error when refused). */
    readonly registrar: Registrar
    readonly runtimes: Effect.Effect<ReadonlyArray<RuntimeSummary>>
    readonly get: (runtimeId: string) => Effect.Effect<Option.Option<RuntimeSummary>>
    /** The default deadline in milliseconds. */
    readonly callTimeoutMs: number
    /**
     * `unknown`/`unknown_runtime` when the runtime is not registered; `unavailable` with
     * `inspect_timeout`, `inspect_failed` (threw or rejected) or `inspect_malformed` (answer is not a status).
     */
    readonly inspect: (ref: SessionRef, opts?: CallOverrides) => Effect.Effect<AgentSessionStatus>
    /** As inspect, codes `continue_*`; `continue_unsupported` when the runtime registered no `continue`. */
    readonly continue: (ref: SessionRef, request: ContinueRequest, opts?: CallOverrides) => Effect.Effect<AgentSessionStatus>
    /** As inspect, codes `detach_*`; a `detach` that answers nothing yields `idle`/`detached`. */
    readonly detach: (ref: SessionRef, opts?: CallOverrides) => Effect.Effect<AgentSessionStatus>
  }
}

const decodeAnswer = Schema.decodeUnknownEither(AgentSessionStatus)

const statusOf = (state: AgentSessionStatus["state"], code: string, detail?: string) =>
  AgentSessionStatus.make(detail === undefined ? { state, code } : { state, code, detail })

const describe = (e: unknown): string => {
  const text = e instanceof Error ? `${e.name}: ${e.message}` : String(e)
  return text.length > 200 ? `${text.slice(0, 200)}…` : text
}

const summary = (r: RegisteredRuntime): RuntimeSummary => ({ id: r.id, provider: r.provider, capabilities: r.capabilities })

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
    const deadlines = yield* makeDeadlines

    const register = Effect.fn("AgentSessionRuntimeRegistry.register")(function* (definition: unknown) {
      const decoded = decodeDefinition(definition)
      if (Either.isLeft(decoded)) {
        yield* Effect.logWarning("agent-session runtime registration refused").pipe(
          Effect.annotateLogs({ runtime: decoded.left.runtimeId ?? "(none)", reason: decoded.left.message })
        )
        return yield* decoded.left
      }
      const entry = decoded.right
      const existing = registered.get(entry.id)
      if (existing !== undefined) {
        const error = new DuplicateRuntime({ runtimeId: entry.id, existingProvider: existing.provider })
        yield* Effect.logWarning("agent-session runtime registration refused: duplicate id").pipe(
          Effect.annotateLogs({ runtime: entry.id, provider: entry.provider, kept: existing.provider })
        )
        return yield* error
      }
      registered.set(entry.id, entry)
      yield* Effect.logInfo("agent-session runtime registered").pipe(
        Effect.annotateLogs({ runtime: entry.id, provider: entry.provider, continue: entry.capabilities.continue, detach: entry.capabilities.detach })
      )
      return entry.capabilities
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

    // The deadline: the signal is aborted and the call answers CallTimedOut when it passes, or
    // when the caller is interrupted; a callback that ignores its signal is simply no longer awaited.
    const within = (op: Operation, rt: RegisteredRuntime, timeoutMs: number, invoke: (r: RegisteredRuntime, opts: CallOptions) => unknown) =>
      Effect.async<unknown, CallFailed | CallTimedOut>((resume) => {
        const pending = new PendingCall(op, rt.id, timeoutMs, resume)
        pending.deadline = deadlines.add(deadlines.now() + timeoutMs, pending)
        // A synchronous throw or a plain value becomes a promise like any other answer.
        new Promise<unknown>((ok) => ok(invoke(rt, pending.options))).then(
          (answer) => pending.answered(answer),
          (e) => pending.threw(e)
        )
        return Effect.sync(() => pending.interrupted())
      })

    const call = (op: Operation, ref: SessionRef, overrides: CallOverrides | undefined, invoke: (r: RegisteredRuntime, opts: CallOptions) => unknown) =>
      Effect.suspend(() => {
        const rt = registered.get(ref.runtimeId)
        if (rt === undefined) return Effect.succeed(statusOf("unknown", "unknown_runtime", `no runtime '${ref.runtimeId}' is registered`))
        if (op !== "inspect" && !rt.capabilities[op]) {
          return Effect.succeed(statusOf("unavailable", `${op}_unsupported`, `runtime '${rt.id}' registered no ${op} callback`))
        }
        const timeoutMs = deadlineOf(overrides)
        return within(op, rt, timeoutMs, invoke).pipe(
          Effect.flatMap((answer) => {
            if (answer === undefined && op === "detach") return Effect.succeed(statusOf("idle", "detached"))
            const decoded = decodeAnswer(answer, { errors: "all" })
            return Either.isRight(decoded)
              ? Effect.succeed(decoded.right)
              : Effect.fail(new CallMalformed({ op, runtimeId: rt.id, problems: problemsOf(decoded.left) }))
          }),
          Effect.catchTags({
            CallTimedOut: (e) => Effect.as(logCall(e, `${op}_timeout`), statusOf("unavailable", `${op}_timeout`, `no answer within ${e.timeoutMs} ms`)),
            CallFailed: (e) => Effect.as(logCall(e, `${op}_failed`), statusOf("unavailable", `${op}_failed`, e.reason)),
            CallMalformed: (e) =>
              Effect.as(
                logCall(e, `${op}_malformed`),
                statusOf("unavailable", `${op}_malformed`, e.problems.map((p) => `${p.path || "(root)"}: ${p.reason}`).join("; "))
              )
          })
        )
      })
    const logCall = (e: CallTimedOut | CallFailed | CallMalformed, code: string) =>
      Effect.logWarning("agent-session runtime call answered unavailable").pipe(Effect.annotateLogs({ runtime: e.runtimeId, op: e.op, code }))

    return AgentSessionRuntimeRegistry.of({
      register,
      registrar,
      runtimes: Effect.sync(() => [...registered.values()].map(summary)),
      get: (runtimeId) => Effect.sync(() => Option.map(Option.fromNullable(registered.get(runtimeId)), summary)),
      callTimeoutMs: configured,
      inspect: (ref, opts) => call("inspect", ref, opts, (r, o) => r.definition.inspect(refOf(ref), o)),
      continue: (ref, request, opts) =>
        call("continue", ref, opts, (r, o) => r.definition.continue!(refOf(ref), Object.freeze({ text: request.text, turnId: request.turnId }), o)),
      detach: (ref, opts) => call("detach", ref, opts, (r, o) => r.definition.detach!(refOf(ref), o))
    })
  })

  /** An empty registry: runtimes are added with `register` (or by `loadAgentSessionRuntimes`). */
  static readonly layer = Layer.scoped(AgentSessionRuntimeRegistry, AgentSessionRuntimeRegistry.make)
}

/** `opts` as a callback sees it: `signal` is made on first read (see PendingCall). */
class Options implements CallOptions {
  constructor(private readonly call: PendingCall, readonly timeoutMs: number) {
    Object.freeze(this)
  }
  get signal() {
    return this.call.signal()
  }
}

/**
 * One callback call in flight: settles once, by answer, failure, deadline or interruption. A
 * class rather than closures, and the AbortController is made only when the callback reads
 * `opts.signal`: it is the costliest object of a call for callbacks that never look.
 */
class PendingCall {
  settled = false
  aborted = false
  controller: AbortController | undefined = undefined
  deadline: Deadline | undefined = undefined
  readonly options: Options
  constructor(
    readonly op: Operation,
    readonly runtimeId: string,
    readonly timeoutMs: number,
    readonly resume: (result: Effect.Effect<unknown, CallFailed | CallTimedOut>) => void
  ) {
    this.options = new Options(this, timeoutMs)
  }
  signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController()
      if (this.aborted) this.controller.abort()
    }
    return this.controller.signal
  }
  private abort() {
    this.aborted = true
    this.controller?.abort()
  }
  private settle(): boolean {
    if (this.settled) return false
    this.settled = true
    this.deadline?.cancel()
    return true
  }
  answered(answer: unknown) {
    if (this.settle()) this.resume(Effect.succeed(answer))
  }
  threw(e: unknown) {
    if (this.settle()) this.resume(Effect.fail(new CallFailed({ op: this.op, runtimeId: this.runtimeId, reason: describe(e) })))
  }
  /** The deadline passed. */
  expire() {
    if (!this.settle()) return
    this.abort()
    this.resume(Effect.fail(new CallTimedOut({ op: this.op, runtimeId: this.runtimeId, timeoutMs: this.timeoutMs })))
  }
  interrupted() {
    if (this.settle()) this.abort()
  }
}

/** Callbacks get their own frozen copy: a runtime cannot mutate the caller's reference. */
const refOf = (ref: SessionRef): SessionRef => Object.freeze({ runtimeId: ref.runtimeId, provider: ref.provider, sessionRef: ref.sessionRef })
