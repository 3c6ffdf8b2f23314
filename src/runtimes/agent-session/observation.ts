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
  const lastEventAt = epochMs(o.lastEventAt)
  const observed = metadataOf(o.metadata)
  const metadata = observed === undefined ? ref.metadata : ref.metadata === undefined ? observed : Object.assign({}, ref.metadata, observed)
  const fields = identity(ref, text(o.providerSessionId), text(o.host), text(o.remoteUrl))
  fields.state = state
  if (typeof o.alive === "boolean") fields.alive = o.alive
  put(fields, "startedAt", epochMs(o.startedAt))
  put(fields, "lastEventAt", lastEventAt)
  put(fields, "latestResponse", latestResponse)
  if (completedTurnStates.includes(state)) put(fields, "finalResponse", text(o.finalResponse) ?? latestResponse)
  put(fields, "detail", text(o.detail) ?? (o === answer ? undefined : `the runtime answered ${describeValue(answer)}, not an object`))
  put(fields, "error", errorOf(o.error))
  put(fields, "termination", terminationOf(o.termination, state, lastEventAt))
  if (metadata !== undefined && Object.keys(metadata).length > 0) fields.metadata = metadata
  fields.reconciledAt = now
  return AgentSessionStatus.make(fields as AgentSessionStatus, TRUSTED)
}

/**
 * A read that could not be made: `unavailable` with the error, identity from the ref, and the
 * last state anyone reported in the detail (the session itself may be fine).
 */
export const unavailableStatus = (ref: SessionRef, now: number, error: AgentSessionError, detail: string): AgentSessionStatus => {
  const fields = identity(ref, undefined, undefined, undefined)
  fields.state = "unavailable"
  fields.error = error
  fields.detail = ref.lastKnownState === undefined ? detail : `${detail} Last reported state: ${ref.lastKnownState}.`
  if (ref.metadata !== undefined) fields.metadata = ref.metadata
  fields.reconciledAt = now
  return AgentSessionStatus.make(fields as AgentSessionStatus, TRUSTED)
}

/** `null`/`undefined` from a callback: the runtime has no such session. */
export const sessionNotFound = (ref: SessionRef, now: number) =>
  unavailableStatus(ref, now, { code: "session_not_found", message: "the runtime has no state for this session" }, `Runtime '${ref.runtime}' has no session '${ref.sessionId}'.`)

/**
 * The statuses built here are valid by construction (every field is checked above, and the
 * property test decodes thousands of them against the schema), so the constructor does not
 * validate them again: that check was a third of a registry call's cost (about 37 µs).
 */
const TRUSTED = { disableValidation: true } as const

/**
 * A status's fields are built by assignment onto this start, never as `{ ...spread, more }`: on
 * Node 20 an object literal spreading a fresh object and adding members cost about 7 µs a member
 * (a 15-member status took over 100 µs), where plain assignment costs nanoseconds.
 */
type Fields = { -readonly [K in keyof AgentSessionStatus]?: AgentSessionStatus[K] }

/** Identity (runtime, provider, sessionId) from the ref only; where-to-find fields from the answer, else the ref. */
const identity = (ref: SessionRef, providerSessionId: string | undefined, host: string | undefined, remoteUrl: string | undefined): Fields => {
  const fields: Fields = { runtime: ref.runtime }
  put(fields, "provider", ref.provider)
  fields.sessionId = ref.sessionId
  put(fields, "providerSessionId", providerSessionId ?? ref.providerSessionId)
  put(fields, "host", host ?? ref.host)
  put(fields, "remoteUrl", remoteUrl ?? ref.remoteUrl)
  return fields
}

/** Sets a member only when defined (the status schema's optional fields are absent, not undefined). */
const put = <K extends keyof Fields>(fields: Fields, key: K, value: Fields[K] | undefined) => {
  if (value !== undefined) fields[key] = value
}

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
  const termination: { -readonly [K in keyof AgentSessionTermination]: AgentSessionTermination[K] } = { reason: given ?? derived }
  const at = epochMs(t.at) ?? lastEventAt
  if (at !== undefined) termination.at = at
  if (typeof t.exitCode === "number" && Number.isFinite(t.exitCode)) termination.exitCode = t.exitCode
  const message = text(t.message)
  if (message !== undefined) termination.message = message
  return termination
}

const describeValue = (v: unknown) => (Array.isArray(v) ? "an array" : v === null ? "null" : `a ${typeof v}`)
