/**
 * Which container runtime a turn uses: the workspace's `sandbox.runtime`, else config
 * `containerRuntime`. `auto` fails closed: it is bwrap wherever bwrap is installed, and a bwrap
 * that is installed but cannot start a sandbox fails the turn (`sandbox_unavailable`) rather than
 * running the agent unisolated. Only where bwrap is not installed does `auto` use `process`, and
 * `start`, `doctor` and the chat banner say so (`sandboxWarning`).
 */
import { Effect } from "effect"
import { TurnFailed } from "../pipeline/AgentExecutor.js"
import type { SandboxRuntime } from "./runtime.js"
import * as Bwrap from "./runtimes/bwrap.js"

export interface ChooseOptions {
  /** Whether the bwrap binary is installed; default: on PATH. */
  readonly bwrapInstalled?: () => boolean
}

const unavailable = (runtime: string, reason: string) =>
  new TurnFailed({
    code: "sandbox_unavailable",
    reason: `containerRuntime auto: ${runtime} is installed but cannot start a sandbox here (${reason}); the turn is not run unisolated. Fix ${runtime} (pynchy doctor), or set containerRuntime: process to run agents unisolated on purpose`,
    retryable: false
  })

export const chooseRuntime = (
  wanted: string,
  runtimes: ReadonlyArray<SandboxRuntime>,
  options: ChooseOptions = {}
): Effect.Effect<SandboxRuntime, TurnFailed> =>
  Effect.gen(function* () {
    const named = (name: string) => runtimes.find((r) => r.name === name)
    if (wanted !== "auto") {
      const r = named(wanted)
      if (r === undefined) {
        return yield* new TurnFailed({ code: "unknown_runtime", reason: `no container runtime named '${wanted}' (known: ${runtimes.map((r) => r.name).join(", ") || "none"})`, retryable: false })
      }
      return r
    }
    const bwrap = named("bwrap")
    if (bwrap !== undefined && (options.bwrapInstalled ?? Bwrap.installed)()) {
      const probe: { readonly ok: boolean; readonly reason?: string } = bwrap.available === undefined
        ? { ok: true }
        : yield* Effect.tryPromise(() => bwrap.available!()).pipe(
          Effect.orElseSucceed(() => ({ ok: false, reason: "its availability check threw" }))
        )
      if (probe.ok) return bwrap
      return yield* unavailable("bwrap", probe.reason ?? "no reason given")
    }
    const fallback = named("process")
    if (fallback === undefined) return yield* new TurnFailed({ code: "unknown_runtime", reason: "auto: neither bwrap nor process is registered", retryable: false })
    return fallback
  })

/** How `auto` finds out about bwrap on this machine (the real binary by default; tests inject). */
export interface BwrapProbe {
  readonly installed: () => boolean
  /** Whether it can start a sandbox here; `reason` says why not. */
  readonly available: () => Promise<{ readonly ok: boolean; readonly reason?: string }>
}

export const bwrapProbe: BwrapProbe = {
  installed: Bwrap.installed,
  available: () => Bwrap.make().available?.() ?? Promise.resolve({ ok: true })
}

/** The sandbox settings of a config that decide what `auto` and `bwrap` mean for it. */
export interface SandboxChoices {
  readonly containerRuntime: string
  readonly workspaces: ReadonlyArray<{ readonly sandbox?: { readonly runtime?: string | undefined } | undefined }>
}

/** The runtimes a config asks for: the default (registered workspaces use it) and each workspace's own. */
export const choicesOf = (config: SandboxChoices): ReadonlySet<string> =>
  new Set([config.containerRuntime, ...config.workspaces.flatMap((w) => w.sandbox?.runtime ?? [])])

export const UNISOLATED_WARNING =
  "agents run UNISOLATED (plain child processes, no sandbox): containerRuntime is auto and bwrap is not installed. Install it (apt-get install bubblewrap), or set containerRuntime: process to accept this"

/**
 * The one warning `start` logs and the chat banner shows about the sandbox, or undefined when
 * agents run isolated or `process` was chosen on purpose (then nothing is said).
 */
export const sandboxWarning = (config: SandboxChoices, probe: BwrapProbe = bwrapProbe): Effect.Effect<string | undefined> =>
  Effect.gen(function* () {
    const choices = choicesOf(config)
    if (!choices.has("auto") && !choices.has("bwrap")) return undefined
    if (!probe.installed()) {
      return choices.has("auto") ? UNISOLATED_WARNING : "containerRuntime bwrap: bwrap is not installed, so turns fail (apt-get install bubblewrap)"
    }
    const r = yield* Effect.tryPromise(probe.available).pipe(Effect.orElseSucceed(() => ({ ok: false, reason: "its availability check threw" })))
    if (r.ok) return undefined
    return `bwrap is installed but cannot start a sandbox here (${r.reason ?? "no reason given"}): turns fail with sandbox_unavailable and never run unisolated. See pynchy doctor`
  })

/** That warning as a WARN log line, if there is one. */
export const logSandboxWarning = (config: SandboxChoices, probe: BwrapProbe = bwrapProbe): Effect.Effect<void> =>
  Effect.flatMap(sandboxWarning(config, probe), (w) => (w === undefined ? Effect.void : Effect.logWarning(w)))
