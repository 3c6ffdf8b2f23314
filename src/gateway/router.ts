/**
 * Deployment state and choice: in-flight counts, latency EWMA, consecutive failures, cooldowns
 * (from failures or an upstream's Retry-After), and rpm/tpm windows. Synchronous on purpose: the
 * data path asks it once per attempt and must not pay for a fiber to do so. Time is passed in
 * (the Effect Clock's millis), so TestClock drives it.
 */
import type { RoutingStrategy } from "../config/gateway.js"
import type { Api, Catalog, Deployment, Group } from "./catalog.js"
import { serves } from "./catalog.js"

const MINUTE = 60_000
const EWMA_ALPHA = 0.3

interface State {
  inFlight: number
  latencyEwmaMs: number | null
  fails: number
  cooldownUntil: number
  cooldownReason: "failures" | "retry-after" | null
  requests: number
  failures: number
  windowStart: number
  windowRequests: number
  windowTokens: number
}

export interface DeploymentStatus {
  readonly id: string
  readonly provider: string
  readonly model: string
  readonly inFlight: number
  readonly latencyEwmaMs: number | null
  readonly consecutiveFails: number
  /** Epoch millis when the cooldown ends, or null when none. */
  readonly cooldownUntil: number | null
  readonly cooldownReason: "failures" | "retry-after" | null
  readonly requests: number
  readonly failures: number
  readonly rpmUsed: number
  readonly tpmUsed: number
}

export interface RouterOptions {
  readonly strategy: RoutingStrategy
  readonly allowedFails: number
  readonly cooldownMs: number
  /** [0, 1); injectable so tests can pin choices. */
  readonly random?: () => number
  /** Told when a deployment starts cooling down. */
  readonly onCooldown?: (d: Deployment, until: number, reason: "failures" | "retry-after") => void
}

export class Router {
  private readonly state = new Map<string, State>()
  private readonly chains = new Map<string, ReadonlyArray<Group>>()
  private readonly random: () => number

  constructor(readonly catalog: Catalog, private readonly options: RouterOptions) {
    this.random = options.random ?? Math.random
    for (const d of catalog.deployments) {
      this.state.set(d.id, {
        inFlight: 0, latencyEwmaMs: null, fails: 0, cooldownUntil: 0, cooldownReason: null,
        requests: 0, failures: 0, windowStart: 0, windowRequests: 0, windowTokens: 0
      })
    }
  }

  /** The group and its fallbacks (transitively, each once), in the order they are tried. */
  chain(name: string): ReadonlyArray<Group> | undefined {
    const cached = this.chains.get(name)
    if (cached) return cached
    const first = this.catalog.groups.get(name)
    if (!first) return undefined
    const out: Array<Group> = []
    const seen = new Set<string>()
    const visit = (g: Group) => {
      if (seen.has(g.name)) return
      seen.add(g.name)
      out.push(g)
      for (const f of g.fallbacks) {
        const next = this.catalog.groups.get(f)
        if (next) visit(next)
      }
    }
    visit(first)
    this.chains.set(name, out)
    return out
  }

  private s(d: Deployment): State {
    return this.state.get(d.id)!
  }

  private roll(s: State, now: number) {
    const start = now - (now % MINUTE)
    if (s.windowStart !== start) {
      s.windowStart = start
      s.windowRequests = 0
      s.windowTokens = 0
    }
  }

  /** Millis until `d` may take a request (0 when it may now). */
  private blockedFor(d: Deployment, now: number): number {
    const s = this.s(d)
    this.roll(s, now)
    let wait = s.cooldownUntil > now ? s.cooldownUntil - now : 0
    const overRpm = d.rpm !== undefined && s.windowRequests >= d.rpm
    const overTpm = d.tpm !== undefined && s.windowTokens >= d.tpm
    if (overRpm || overTpm) wait = Math.max(wait, s.windowStart + MINUTE - now)
    return wait
  }

  /**
   * The deployment for the next attempt: the first group in the chain with an available
   * deployment this request has not tried; else an available one it has tried; else none.
   */
  pick(chain: ReadonlyArray<Group>, api: Api, tried: ReadonlySet<string>, now: number): Deployment | undefined {
    let fallback: Array<Deployment> | undefined
    for (const g of chain) {
      let fresh: Array<Deployment> | undefined
      let again: Array<Deployment> | undefined
      for (const d of g.deployments) {
        if (!serves(d.kind, api) || this.blockedFor(d, now) > 0) continue
        if (tried.has(d.id)) (again ??= []).push(d)
        else (fresh ??= []).push(d)
      }
      if (fresh) return this.choose(fresh)
      if (again && !fallback) fallback = again
    }
    return fallback ? this.choose(fallback) : undefined
  }

  /** Whether a deployment this request has not tried is available now (fail over at once). */
  hasFresh(chain: ReadonlyArray<Group>, api: Api, tried: ReadonlySet<string>, now: number): boolean {
    for (const g of chain) {
      for (const d of g.deployments) if (serves(d.kind, api) && !tried.has(d.id) && this.blockedFor(d, now) === 0) return true
    }
    return false
  }

  /** Millis until some deployment of the chain may take a request (0: one may now). */
  waitFor(chain: ReadonlyArray<Group>, api: Api, now: number): number {
    let wait = Number.POSITIVE_INFINITY
    for (const g of chain) {
      for (const d of g.deployments) if (serves(d.kind, api)) wait = Math.min(wait, this.blockedFor(d, now))
    }
    return wait
  }

  /** Whether any deployment in the chain serves this API at all. */
  servesApi(chain: ReadonlyArray<Group>, api: Api): boolean {
    return chain.some((g) => g.deployments.some((d) => serves(d.kind, api)))
  }

  private choose(ds: ReadonlyArray<Deployment>): Deployment {
    if (ds.length === 1) return ds[0]!
    switch (this.options.strategy) {
      case "least-in-flight": {
        const min = Math.min(...ds.map((d) => this.s(d).inFlight))
        return this.weighted(ds.filter((d) => this.s(d).inFlight === min))
      }
      case "lowest-latency": {
        // Unmeasured deployments first, so every deployment gets a sample.
        const unmeasured = ds.filter((d) => this.s(d).latencyEwmaMs === null)
        if (unmeasured.length > 0) return this.weighted(unmeasured)
        let best = ds[0]!
        for (const d of ds) if (this.s(d).latencyEwmaMs! < this.s(best).latencyEwmaMs!) best = d
        return best
      }
      default:
        return this.weighted(ds)
    }
  }

  private weighted(ds: ReadonlyArray<Deployment>): Deployment {
    if (ds.length === 1) return ds[0]!
    let total = 0
    for (const d of ds) total += d.weight
    let r = this.random() * total
    for (const d of ds) {
      r -= d.weight
      if (r < 0) return d
    }
    return ds[ds.length - 1]!
  }

  onStart(d: Deployment, now: number): void {
    const s = this.s(d)
    this.roll(s, now)
    s.inFlight++
    s.requests++
    s.windowRequests++
  }

  /** Time to response headers, the latency the strategy compares. */
  onHeaders(d: Deployment, latencyMs: number): void {
    const s = this.s(d)
    s.latencyEwmaMs = s.latencyEwmaMs === null ? latencyMs : s.latencyEwmaMs + EWMA_ALPHA * (latencyMs - s.latencyEwmaMs)
  }

  onEnd(d: Deployment): void {
    this.s(d).inFlight--
  }

  onSuccess(d: Deployment): void {
    this.s(d).fails = 0
  }

  /**
   * A failed attempt. A Retry-After always holds the deployment back that long; otherwise more
   * than `allowedFails` consecutive failures cool it down (never the sole deployment of a group).
   */
  onFailure(d: Deployment, now: number, retryAfterMs: number | undefined): void {
    const s = this.s(d)
    s.fails++
    s.failures++
    if (retryAfterMs !== undefined && retryAfterMs > 0) {
      if (now + retryAfterMs > s.cooldownUntil) {
        s.cooldownUntil = now + retryAfterMs
        s.cooldownReason = "retry-after"
        this.options.onCooldown?.(d, s.cooldownUntil, "retry-after")
      }
    } else if (d.coolable && s.fails > this.options.allowedFails && this.options.cooldownMs > 0) {
      s.cooldownUntil = now + this.options.cooldownMs
      s.cooldownReason = "failures"
      s.fails = 0
      this.options.onCooldown?.(d, s.cooldownUntil, "failures")
    }
  }

  onTokens(d: Deployment, tokens: number, now: number): void {
    const s = this.s(d)
    this.roll(s, now)
    s.windowTokens += tokens
  }

  status(now: number): ReadonlyArray<DeploymentStatus> {
    return this.catalog.deployments.map((d) => {
      const s = this.s(d)
      this.roll(s, now)
      const cooling = s.cooldownUntil > now
      return {
        id: d.id,
        provider: d.provider,
        model: d.model,
        inFlight: s.inFlight,
        latencyEwmaMs: s.latencyEwmaMs === null ? null : Math.round(s.latencyEwmaMs * 1000) / 1000,
        consecutiveFails: s.fails,
        cooldownUntil: cooling ? s.cooldownUntil : null,
        cooldownReason: cooling ? s.cooldownReason : null,
        requests: s.requests,
        failures: s.failures,
        rpmUsed: s.windowRequests,
        tpmUsed: s.windowTokens
      }
    })
  }
}
