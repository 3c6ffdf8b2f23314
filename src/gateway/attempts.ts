/**
 * The attempts of one request. The first runs in plain callbacks (most requests need no other),
 * its header timeout on the shared deadline queue; only a failure starts a fiber, where the retry
 * Schedule (backoff, Retry-After, failover to an untried deployment) and an Effect timeout decide
 * the rest. The winner goes to the relay's `pipe`, the last failure to its `fail`.
 */
import { Duration, Effect, type Fiber, FiberId, Schedule } from "effect"
import type { Accounting } from "./accounting.js"
import type { Deployment } from "./catalog.js"
import type { GatewayConfig } from "../config/gateway.js"
import type { Deadline, Deadlines } from "./deadlines.js"
import type { Relay } from "./relay.js"
import type { Ctx, Log } from "./request.js"
import type { Router } from "./router.js"
import { type Answer, AttemptFailed, type Upstream } from "./upstream.js"

export interface Attempts {
  /** Sends an admitted request upstream; it ends piped, failed or accounted as closed. */
  readonly forward: (ctx: Ctx) => void
  /** The client left or the token was revoked: stop whatever attempt or retry is running. */
  readonly cut: (ctx: Ctx) => void
}

export interface AttemptsDeps {
  readonly router: Router
  readonly config: GatewayConfig
  readonly deadlines: Deadlines
  readonly upstream: Upstream
  readonly relay: Relay
  readonly accounting: Accounting
  readonly runFork: <A, E>(effect: Effect.Effect<A, E>) => Fiber.RuntimeFiber<A, E>
  readonly log: Log
  readonly now: () => number
}

export const makeAttempts = (deps: AttemptsDeps): Attempts => {
  const { accounting: { accountClosed }, deadlines, log, now, relay: { fail, pipe }, router, runFork, upstream: { exchange } } = deps
  const { retry, timeouts } = deps.config

  /** The deployment to try next, marked tried; undefined when none can take the request now. */
  const pick = (ctx: Ctx): Deployment | undefined => {
    const d = router.pick(ctx.chain, ctx.api, ctx.tried, now())
    if (d !== undefined) {
      ctx.tried.add(d.id)
      ctx.attempts++
    }
    return d
  }

  // A provider that cannot be reached fails every attempt of every turn the same way: one warning
  // per provider per cooldown says so, the repeats go to the log at debug.
  const warnedAt = new Map<string, number>()
  const warnNow = (provider: string): boolean => {
    const t = now()
    const last = warnedAt.get(provider)
    if (last !== undefined && t - last < deps.config.cooldown.cooldownMs) return false
    warnedAt.set(provider, t)
    return true
  }

  /** Bookkeeping of every failed attempt, on either path. */
  const failed = (f: AttemptFailed) => {
    if (f.deployment) router.onFailure(f.deployment, now(), f.retryAfterMs)
    const fields = { deployment: f.deployment?.id ?? null, kind: f.kind, status: f.status, code: f.code ?? null, ...(f.deployment ? { host: f.deployment.hostname } : {}) }
    log(f.deployment === undefined || warnNow(f.deployment.provider) ? "Warning" : "Debug", "upstream attempt failed", fields)
  }

  const nextAttempt = (ctx: Ctx): Effect.Effect<Answer, AttemptFailed> =>
    Effect.suspend(() => {
      const d = pick(ctx)
      if (d === undefined) return Effect.fail(AttemptFailed.unavailable())
      return Effect.async<Answer, AttemptFailed>((resume) => {
        const cancel = exchange(ctx, d, (r) => resume(r instanceof AttemptFailed ? Effect.fail(r) : Effect.succeed(r)))
        return Effect.sync(cancel)
      }).pipe(
        Effect.timeoutFail({ duration: Duration.millis(timeouts.headersMs), onTimeout: () => AttemptFailed.timedOut(d) }),
        Effect.tapError((f) => Effect.sync(() => failed(f)))
      )
    })

  /** Retries go elsewhere at once when an untried deployment is free; otherwise back off, at least until one is. */
  const policy = (ctx: Ctx) =>
    Schedule.exponential(Duration.millis(Math.max(1, retry.baseMs))).pipe(
      Schedule.jittered,
      Schedule.intersect(Schedule.recurs(retry.attempts - 1)),
      Schedule.whileInput((f: AttemptFailed) => {
        if (!f.retryable || ctx.res.destroyed) return false
        const t = now()
        return router.hasFresh(ctx.chain, ctx.api, ctx.tried, t) || router.waitFor(ctx.chain, ctx.api, t) <= retry.maxWaitMs
      }),
      Schedule.modifyDelay((_, delay) => {
        const t = now()
        if (router.hasFresh(ctx.chain, ctx.api, ctx.tried, t)) return Duration.zero
        return Duration.millis(Math.max(Math.min(Duration.toMillis(delay), retry.maxDelayMs), router.waitFor(ctx.chain, ctx.api, t)))
      })
    )

  /** After a failed first attempt: the retry Schedule decides the rest, in a fiber. */
  const retryAfter = (ctx: Ctx, first: AttemptFailed) => {
    let firstSeen = false
    const attempts = Effect.suspend(() => {
      if (firstSeen) return nextAttempt(ctx)
      firstSeen = true
      return Effect.fail(first)
    })
    ctx.fiber = runFork(
      attempts.pipe(
        Effect.retry(policy(ctx)),
        Effect.match({ onFailure: (f) => fail(ctx, f), onSuccess: (a) => pipe(ctx, a) })
      )
    )
  }

  const forward = (ctx: Ctx) => {
    const d = pick(ctx)
    if (d === undefined) return retryAfter(ctx, AttemptFailed.unavailable())
    let deadline: Deadline | undefined = undefined
    const cancel = exchange(ctx, d, (r) => {
      deadline?.clear()
      // The client left (its close cut the upstream request): not the deployment's failure.
      if (ctx.res.destroyed) {
        if (!(r instanceof AttemptFailed)) {
          r.upReq.destroy()
          r.release()
        }
        return accountClosed(ctx, d.id)
      }
      if (r instanceof AttemptFailed) {
        failed(r)
        if (r.retryable) retryAfter(ctx, r)
        else fail(ctx, r)
      } else pipe(ctx, r)
    })
    deadline = deadlines.add(() => {
      cancel()
      if (ctx.res.destroyed) return
      const f = AttemptFailed.timedOut(d)
      failed(f)
      retryAfter(ctx, f)
    })
  }

  const cut = (ctx: Ctx) => {
    if (ctx.cut === undefined) ctx.cut = ctx.live
    ctx.fiber?.unsafeInterruptAsFork(FiberId.none)
    ctx.upReq?.destroy()
  }

  return { forward, cut }
}
