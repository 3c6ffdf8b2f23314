/**
 * Turn tokens: the only credential a sandbox holds. A token is 32 random bytes, bound to a
 * workspace, a conversation, optionally a set of models and a token budget, and dies at its
 * expiry or when revoked (in-flight requests made with it are cut).
 */
import * as crypto from "node:crypto"
import * as Option from "effect/Option"
import type * as Tracer from "effect/Tracer"
import { parseTraceparent } from "../telemetry/trace-context.js"
import { InFlight } from "./in-flight.js"
import { digestOf, KEY_PREFIX, keyAccount, type KeyRecord } from "./keys.js"

export interface Grant {
  readonly workspace: string
  readonly conversationId: string
  /** The turn a token was minted for (its usage is that turn's); null for gateway keys. */
  readonly turnId: number | null
  /** null: every model the gateway serves. */
  readonly models: ReadonlySet<string> | null
  readonly expiresAt: number
  readonly tokenBudget: number | null
  used: number
  /** Held by this token's requests in flight (see Budgets). */
  reserved: number
  /** Cancels of the requests in flight with this token (their count is capped). */
  readonly inFlight: InFlight
  /** The turn's trace context: its upstream attempts are spans under it (none for gateway keys). */
  readonly trace: Tracer.ExternalSpan | undefined
}

export interface GrantInput {
  readonly workspace: string
  readonly conversationId: string
  readonly turnId?: number | undefined
  readonly models?: ReadonlyArray<string> | undefined
  readonly expiresAt: number
  readonly tokenBudget?: number | undefined
  /** The turn's W3C `traceparent`. */
  readonly traceparent?: string | null | undefined
}

export const TOKEN_PREFIX = "pgw_"

export class TokenTable {
  private readonly grants = new Map<string, Grant>()
  /** Gateway keys (`pynchy keys`) by digest: the table never holds a key itself. */
  private keys = new Map<string, Grant>()
  private lastSweep = 0

  /**
   * Replaces the gateway keys with the store's: a key still there keeps its grant (and its
   * requests in flight); a key gone (revoked) has its requests in flight cut.
   */
  setKeys(records: ReadonlyArray<KeyRecord>): void {
    const next = new Map<string, Grant>()
    for (const r of records) {
      const models = r.models === null ? null : new Set(r.models)
      const kept = this.keys.get(r.digest)
      next.set(r.digest, kept !== undefined && kept.workspace === keyAccount(r.name) ? kept : {
        workspace: keyAccount(r.name),
        conversationId: keyAccount(r.name),
        turnId: null,
        models,
        expiresAt: r.expiresAt ?? Number.POSITIVE_INFINITY,
        tokenBudget: null,
        used: 0,
        reserved: 0,
        inFlight: new InFlight(),
        trace: undefined
      })
    }
    for (const [digest, grant] of this.keys) {
      if (next.get(digest) === grant) continue
      grant.inFlight.cancelAll()
    }
    this.keys = next
  }

  /** Minting also sweeps expired tokens (at most once a minute): no timer needed. */
  mint(input: GrantInput, now: number): string {
    if (now - this.lastSweep >= 60_000) {
      this.lastSweep = now
      this.sweep(now)
    }
    const token = TOKEN_PREFIX + crypto.randomBytes(32).toString("base64url")
    this.grants.set(token, {
      workspace: input.workspace,
      conversationId: input.conversationId,
      turnId: input.turnId ?? null,
      models: input.models ? new Set(input.models) : null,
      expiresAt: input.expiresAt,
      tokenBudget: input.tokenBudget ?? null,
      used: 0,
      reserved: 0,
      inFlight: new InFlight(),
      trace: Option.getOrUndefined(parseTraceparent(input.traceparent))
    })
    return token
  }

  /** The live grant of a token; an expired one is dropped (and its requests cut) on sight. */
  lookup(token: string, now: number): Grant | undefined {
    if (token.startsWith(KEY_PREFIX)) {
      const key = this.keys.get(digestOf(token))
      return key !== undefined && now < key.expiresAt ? key : undefined
    }
    const grant = this.grants.get(token)
    if (grant === undefined) return undefined
    if (now >= grant.expiresAt) {
      this.revoke(token)
      return undefined
    }
    return grant
  }

  revoke(token: string): boolean {
    const grant = this.grants.get(token)
    if (grant === undefined) return false
    this.grants.delete(token)
    grant.inFlight.cancelAll()
    return true
  }

  /** Drops every expired token; returns how many. */
  sweep(now: number): number {
    let n = 0
    for (const [token, grant] of this.grants) if (now >= grant.expiresAt && this.revoke(token)) n++
    return n
  }

  get size(): number {
    return this.grants.size
  }

  revokeAll(): void {
    for (const token of [...this.grants.keys()]) this.revoke(token)
  }
}
