import { Either, Schema } from "effect"
import { Problem } from "../../domain/errors.js"
import { problemsOf } from "../../domain/problems.js"
import { RuntimeDefinitionInvalid } from "./errors.js"

/** Which session a callback addresses: the runtime, its provider, and the runtime's own reference. */
export interface SessionRef {
  readonly runtimeId: string
  readonly provider: string
  readonly sessionRef: string
}

/** Passed to every callback: `signal` is aborted when the deadline (`timeoutMs`) passes. */
export interface CallOptions {
  readonly signal: AbortSignal
  readonly timeoutMs: number
}

/** What `continue` is asked to do: deliver `text` into the session (for a delegated turn, `turnId` names it). */
export interface ContinueRequest {
  readonly text: string
  readonly turnId?: number | undefined
}

/**
 * What a host module registers. Each callback addresses ONE already-known session and may return
 * a value or a promise of `{ state, code?, detail?, output? }`; `detach` may also return nothing.
 */
export interface AgentSessionRuntimeDefinition {
  readonly id: string
  readonly provider: string
  readonly inspect: (ref: SessionRef, opts: CallOptions) => unknown
  readonly continue?: (ref: SessionRef, request: ContinueRequest, opts: CallOptions) => unknown
  readonly detach?: (ref: SessionRef, opts: CallOptions) => unknown
}

/** Derived from which callbacks were supplied. */
export interface Capabilities {
  readonly inspect: true
  readonly continue: boolean
  readonly detach: boolean
}

export type Operation = "inspect" | "continue" | "detach"

export interface RegisteredRuntime {
  readonly id: string
  readonly provider: string
  readonly capabilities: Capabilities
  readonly definition: AgentSessionRuntimeDefinition
}

const Fn = Schema.declare((u: unknown): u is (...args: Array<unknown>) => unknown => typeof u === "function", {
  identifier: "Function",
  description: "a function"
})

const Definition = Schema.Struct({
  id: Schema.String.pipe(
    Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/, {
      message: () => "must be 1-128 characters of letters, digits, '.', '_', ':' or '-', starting with a letter or digit"
    })
  ),
  provider: Schema.NonEmptyTrimmedString.pipe(Schema.maxLength(128)),
  inspect: Fn,
  continue: Schema.optional(Fn),
  detach: Schema.optional(Fn)
})

/** Checks a registration from a module (untrusted shape, trusted operator code). */
export const decodeDefinition = (input: unknown): Either.Either<RegisteredRuntime, RuntimeDefinitionInvalid> => {
  if (typeof input !== "object" || input === null) {
    return Either.left(new RuntimeDefinitionInvalid({ runtimeId: null, problems: [Problem.make({ path: "", reason: "expected an object" })] }))
  }
  const decoded = Schema.decodeUnknownEither(Definition)(input, { errors: "all" })
  if (Either.isLeft(decoded)) {
    const id = (input as { id?: unknown }).id
    // An optional member fails as both "not a function" and "not undefined": one problem per path.
    const problems = problemsOf(decoded.left).filter((p, i, all) => all.findIndex((q) => q.path === p.path) === i)
    return Either.left(new RuntimeDefinitionInvalid({ runtimeId: typeof id === "string" ? id : null, problems }))
  }
  const def = input as AgentSessionRuntimeDefinition
  return Either.right({
    id: decoded.right.id,
    provider: decoded.right.provider,
    capabilities: { inspect: true, continue: typeof def.continue === "function", detach: typeof def.detach === "function" },
    definition: def
  })
}
