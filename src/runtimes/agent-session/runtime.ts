import { Either } from "effect"
import type { AgentSessionState } from "../../domain/attachment.js"
import { Problem } from "../../domain/errors.js"
import { RuntimeDefinitionInvalid } from "./errors.js"

/**
 * Which session a callback addresses (ClawConnect's ref): the runtime, its provider, the
 * session's id in the runtime's namespace, and what the attachment knows besides. Built from the
 * attachment record; a callback gets its own frozen copy.
 */
export interface SessionRef {
  readonly runtime: string
  readonly provider?: string | undefined
  readonly sessionId: string
  readonly providerSessionId?: string | undefined
  readonly host?: string | undefined
  readonly remoteUrl?: string | undefined
  /** Strings only. */
  readonly metadata?: Readonly<Record<string, string>> | undefined
  /** The last state anyone reported: context for the runtime, never authority. */
  readonly lastKnownState?: AgentSessionState | undefined
}

/** Passed to every callback: `now` for the whole call, `signal` aborted when the deadline passes. */
export interface CallOptions {
  readonly now: number
  readonly signal: AbortSignal
  readonly timeoutMs?: number
}

export interface ContinueRequest {
  readonly prompt?: string | undefined
}

export interface DetachRequest {
  readonly reason?: string | undefined
}

/**
 * What a host module registers. Each callback addresses ONE already-known session and answers
 * (a value or a promise) a loose observation, or null/undefined for "no such session".
 */
export interface AgentSessionRuntimeDefinition {
  readonly id: string
  readonly provider?: string
  readonly inspect: (ref: SessionRef, opts: CallOptions) => unknown
  readonly continue?: (ref: SessionRef, request: ContinueRequest, opts: CallOptions) => unknown
  readonly detach?: (ref: SessionRef, request: DetachRequest, opts: CallOptions) => unknown
}

/** Derived from which callbacks are functions, never declared. */
export interface Capabilities {
  readonly inspect: boolean
  readonly continue: boolean
  readonly detach: boolean
}

export type Operation = keyof Capabilities

/** What `register` returns: the runtime as the registry holds it. */
export interface RuntimeSummary {
  readonly id: string
  /** "" when the module named none. */
  readonly provider: string
  readonly capabilities: Capabilities
}

export interface RegisteredRuntime extends RuntimeSummary {
  readonly callbacks: Readonly<Record<Operation, ((...args: Array<unknown>) => unknown) | undefined>>
}

/** ClawConnect's runtime id: a letter or digit, then up to 63 of letters, digits, `.`, `_`, `-`. */
export const RUNTIME_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/

// Bound to the registered object: a module may write its callbacks as methods using `this`.
const fn = (v: unknown, self: object) => (typeof v === "function" ? (v as (...args: Array<unknown>) => unknown).bind(self) : undefined)

/**
 * Reads a registration from a module (trusted operator code of untrusted shape). Refused only for
 * a malformed id, as in ClawConnect; a missing callback is a missing capability, not an error.
 */
export const readDefinition = (input: unknown): Either.Either<RegisteredRuntime, RuntimeDefinitionInvalid> => {
  const id = typeof input === "object" && input !== null ? (input as { id?: unknown }).id : undefined
  if (typeof id !== "string" || !RUNTIME_ID.test(id)) {
    const reason = typeof input !== "object" || input === null
      ? "expected an object { id, provider, inspect, continue?, detach? }"
      : "must be 1-64 characters of letters, digits, '.', '_' or '-', starting with a letter or digit"
    return Either.left(new RuntimeDefinitionInvalid({
      runtimeId: typeof id === "string" ? id.slice(0, 80) : null,
      problems: [Problem.make({ path: typeof input === "object" && input !== null ? "id" : "", reason })]
    }))
  }
  const def = input as Record<string, unknown>
  const callbacks = { inspect: fn(def.inspect, def), continue: fn(def.continue, def), detach: fn(def.detach, def) }
  return Either.right({
    id,
    provider: typeof def.provider === "string" ? def.provider : "",
    capabilities: { inspect: callbacks.inspect !== undefined, continue: callbacks.continue !== undefined, detach: callbacks.detach !== undefined },
    callbacks
  })
}
