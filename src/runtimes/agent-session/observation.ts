import {
  type AgentSessionError,
  AgentSessionState,
  AgentSessionStatus,
  type AgentSessionTermination,
  completedTurnStates,
  TerminationReason,
  terminalStates
} from "../../domain/attachment.js"
import type { SessionRef } from "./runtime.js"

/**
 * The one place a runtime's loose answer becomes an `AgentSessionStatus`. Whatever comes in (any
 * JSON, or any object a callback returns) comes out as a status in the closed vocabulary:
 *
 * - identity (runtime, provider, sessionId) is the ref's; a reply cannot rename its session;
 * - an unrecognized or missing state is `unknown`;
 * - `finalResponse` only in `completed`/`idle`, falling back to `latestResponse`;
 * - `termination` only in a terminal state, its reason derived from the state when not given;
 * - timestamps as epoch ms, from numbers or ISO strings;
 * - metadata strings only (finite numbers and booleans become strings), over the ref's.
 */
export const normalizeObservation = (ref: SessionRef, answer: unknown, now: number): AgentSessionStatus => {
  const o: Record<string, unknown> = typeof answer === "object" && answer !== null && !Array.isArray(answer) ? answer as Record<string, unknown> : {}
  const state = stateOf(o.state) ?? "unknown"
  const latestResponse = text(o.latestResponse)
  const finalResponse = completedTurnStates.includes(state) ? (text(o.finalResponse) ?? latestResponse) : undefined
  const lastEventAt = epochMs(o.lastEventAt)
  const observed = metadataOf(o.metadata)
  const metadata = ref.metadata !== undefined || observed !== undefined ? { ...ref.metadata, ...observed } : undefined
  const detail = text(o.detail) ?? (o === answer ? undefined : `the runtime answered ${describeValue(answer)}, not an object`)
  return AgentSessionStatus.make(defined({
    ...identity(ref),
    providerSessionId: text(o.providerSessionId) ?? ref.providerSessionId,
    host: text(o.host) ?? ref.host,
    remoteUrl: text(o.remoteUrl) ?? ref.remoteUrl,
    state,
    alive: typeof o.alive === "boolean" ? o.alive : undefined,
    startedAt: epochMs(o.startedAt),
    lastEventAt,
    latestResponse,
    finalResponse,
    detail,
    error: errorOf(o.error),
    termination: terminationOf(o.termination, state, lastEventAt),
    metadata: metadata !== undefined && Object.keys(metadata).length > 0 ? metadata : undefined,
    reconciledAt: now
  }), TRUSTED)
}

/**
 * A read that could not be made: `unavailable` with the error, identity from the ref, and the
 * last state anyone reported in the detail (the session itself may be fine).
 */
export const unavailableStatus = (ref: SessionRef, now: number, error: AgentSessionError, detail: string): AgentSessionStatus =>
  AgentSessionStatus.make(defined({
    ...identity(ref),
    providerSessionId: ref.providerSessionId,
    host: ref.host,
    remoteUrl: ref.remoteUrl,
    state: "unavailable" as const,
    error,
    detail: ref.lastKnownState === undefined ? detail : `${detail} Last reported state: ${ref.lastKnownState}.`,
    metadata: ref.metadata,
    reconciledAt: now
  }), TRUSTED)

/** `null`/`undefined` from a callback: the runtime has no such session. */
export const sessionNotFound = (ref: SessionRef, now: number) =>
  unavailableStatus(ref, now, { code: "session_not_found", message: "the runtime has no state for this session" }, `Runtime '${ref.runtime}' has no session '${ref.sessionId}'.`)

/**
 * The statuses built here are valid by construction (every field is checked above, and the
 * property test decodes thousands of them against the schema), so the constructor does not
 * validate them again: that check was a third of a registry call's cost (about 37 µs).
 */
const TRUSTED = { disableValidation: true } as const

const identity = (ref: SessionRef) => ({ runtime: ref.runtime, provider: ref.provider, sessionId: ref.sessionId })

const states = new Set<string>(AgentSessionState.literals)
const stateOf = (v: unknown) => (typeof v === "string" && states.has(v) ? (v as AgentSessionState) : undefined)

const text = (v: unknown) => (typeof v === "string" && v.length > 0 ? v : undefined)

/** Epoch ms from a finite number or a date string `Date.parse` reads (ISO 8601). */
export const epochMs = (v: unknown): number | undefined => {
  if (typeof v === "number") return Number.isFinite(v) ? v : undefined
  if (typeof v === "string") {
    const ms = Date.parse(v)
    return Number.isFinite(ms) ? ms : undefined
  }
  return undefined
}

/** Strings kept, finite numbers and booleans stringified (`{ attempt: 2 }` means something), the rest dropped. */
export const metadataOf = (v: unknown): Record<string, string> | undefined => {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return undefined
  const out: Record<string, string> = {}
  for (const [k, x] of Object.entries(v)) {
    if (typeof x === "string") out[k] = x
    else if ((typeof x === "number" && Number.isFinite(x)) || typeof x === "boolean") out[k] = String(x)
  }
  return Object.keys(out).length > 0 ? out : undefined
}

const errorOf = (v: unknown): AgentSessionError | undefined => {
  if (typeof v === "string") return v.length > 0 ? { code: "runtime_error", message: v } : undefined
  if (typeof v !== "object" || v === null) return undefined
  const { code, message } = v as { code?: unknown; message?: unknown }
  const c = text(code)
  const m = text(message)
  return c === undefined && m === undefined ? undefined : { code: c ?? "runtime_error", message: m ?? c! }
}

const reasons = new Set<string>(TerminationReason.literals)

const terminationOf = (v: unknown, state: AgentSessionState, lastEventAt: number | undefined): AgentSessionTermination | undefined => {
  if (!terminalStates.includes(state)) return undefined
  const t = typeof v === "object" && v !== null ? v as Record<string, unknown> : {}
  const given = typeof t.reason === "string" && reasons.has(t.reason) ? t.reason as AgentSessionTermination["reason"] : undefined
  const derived = completedTurnStates.includes(state) ? "completed" : state === "dead" ? "died" : "failed"
  return defined({
    reason: given ?? derived,
    at: epochMs(t.at) ?? lastEventAt,
    exitCode: typeof t.exitCode === "number" && Number.isFinite(t.exitCode) ? t.exitCode : undefined,
    message: text(t.message)
  })
}

const describeValue = (v: unknown) => (Array.isArray(v) ? "an array" : v === null ? "null" : `a ${typeof v}`)

/** Drops undefined members (the status schema's optional fields are absent, not undefined). */
const defined = <T extends Record<string, unknown>>(o: T): { [K in keyof T]: Exclude<T[K], undefined> } => {
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(o)) if (v !== undefined) out[k] = v
  return out as { [K in keyof T]: Exclude<T[K], undefined> }
}
