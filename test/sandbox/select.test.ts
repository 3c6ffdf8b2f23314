/**
 * `containerRuntime: auto` fails closed: bwrap wherever it is installed, a turn failure (never the
 * process runtime) when it is installed but cannot start a sandbox, and `process` only where bwrap
 * is not installed, with the warning `start` and the chat banner show.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { TurnFailed } from "../../src/pipeline/AgentExecutor.js"
import type { SandboxRuntime } from "../../src/sandbox/runtime.js"
import { type BwrapProbe, chooseRuntime, sandboxWarning, UNISOLATED_WARNING } from "../../src/sandbox/select.js"

/** A runtime that records whether it was probed; it never starts anything. */
const fake = (name: string, available?: () => Promise<{ ok: boolean; reason?: string }>) => {
  const probed: Array<string> = []
  const runtime: SandboxRuntime = {
    name,
    start: () => Promise.reject(new Error("not in this test")),
    kill: () => Promise.resolve(),
    isAlive: () => Promise.resolve(false),
    ...(available !== undefined ? { available: () => (probed.push(name), available()) } : {})
  }
  return { runtime, probed }
}

const broken = () => Promise.resolve({ ok: false, reason: "bwrap cannot create namespaces here" })
const works = () => Promise.resolve({ ok: true })

const failureOf = <A>(exit: Exit.Exit<A, TurnFailed>): TurnFailed => {
  if (Exit.isSuccess(exit)) assert.fail(`expected a turn failure, got runtime ${(exit.value as SandboxRuntime).name}`)
  const failure = exit.cause._tag === "Fail" ? exit.cause.error : undefined
  assert.instanceOf(failure, TurnFailed)
  return failure
}

describe("chooseRuntime", () => {
  it.effect("auto, bwrap installed but unable to start a sandbox: sandbox_unavailable with the probe's reason, never process", () =>
    Effect.gen(function* () {
      const bwrap = fake("bwrap", broken)
      const proc = fake("process", works)
      const exit = yield* Effect.exit(chooseRuntime("auto", [bwrap.runtime, proc.runtime], { bwrapInstalled: () => true }))
      const failure = failureOf(exit)
      assert.strictEqual(failure.code, "sandbox_unavailable")
      assert.isFalse(failure.retryable)
      assert.include(failure.reason, "bwrap cannot create namespaces here")
      assert.include(failure.reason, "not run unisolated")
      assert.deepStrictEqual([bwrap.probed, proc.probed], [["bwrap"], []])
    }))

  it.effect("auto, bwrap installed and its check throws: sandbox_unavailable too", () =>
    Effect.gen(function* () {
      const bwrap = fake("bwrap", () => Promise.reject(new Error("boom")))
      const exit = yield* Effect.exit(chooseRuntime("auto", [bwrap.runtime, fake("process", works).runtime], { bwrapInstalled: () => true }))
      assert.strictEqual(failureOf(exit).code, "sandbox_unavailable")
    }))

  it.effect("auto, bwrap installed and working: bwrap", () =>
    Effect.gen(function* () {
      const chosen = yield* chooseRuntime("auto", [fake("process", works).runtime, fake("bwrap", works).runtime], { bwrapInstalled: () => true })
      assert.strictEqual(chosen.name, "bwrap")
    }))

  it.effect("auto, bwrap not installed: process, without probing bwrap", () =>
    Effect.gen(function* () {
      const bwrap = fake("bwrap", broken)
      const chosen = yield* chooseRuntime("auto", [bwrap.runtime, fake("process", works).runtime], { bwrapInstalled: () => false })
      assert.strictEqual(chosen.name, "process")
      assert.deepStrictEqual(bwrap.probed, [])
    }))

  it.effect("a named runtime is used as named; an unknown name is unknown_runtime", () =>
    Effect.gen(function* () {
      const runtimes = [fake("bwrap", broken).runtime, fake("process", works).runtime]
      const chosen = yield* chooseRuntime("process", runtimes, { bwrapInstalled: () => true })
      assert.strictEqual(chosen.name, "process")
      assert.strictEqual(failureOf(yield* Effect.exit(chooseRuntime("podman", runtimes))).code, "unknown_runtime")
    }))
})

describe("sandboxWarning", () => {
  const probe = (installed: boolean, available: BwrapProbe["available"] = works) => {
    const calls: Array<string> = []
    const p: BwrapProbe = { installed: () => installed, available: () => (calls.push("available"), available()) }
    return { p, calls }
  }
  const config = (containerRuntime: string, ...runtimes: Array<string | undefined>) => ({
    containerRuntime,
    workspaces: runtimes.map((runtime) => ({ sandbox: runtime === undefined ? {} : { runtime } }))
  })

  it.effect("auto without bwrap: agents run unisolated, with the install hint", () =>
    Effect.gen(function* () {
      const warning = yield* sandboxWarning(config("auto", undefined), probe(false).p)
      assert.strictEqual(warning, UNISOLATED_WARNING)
      assert.include(warning, "apt-get install bubblewrap")
      // A workspace that asks for auto is enough, whatever the default.
      assert.strictEqual(yield* sandboxWarning(config("process", "auto"), probe(false).p), UNISOLATED_WARNING)
    }))

  it.effect("process chosen in config (default or workspace) is silent, and bwrap is not probed", () =>
    Effect.gen(function* () {
      const { p, calls } = probe(false, broken)
      assert.isUndefined(yield* sandboxWarning(config("process"), p))
      assert.isUndefined(yield* sandboxWarning(config("process", "process"), p))
      assert.deepStrictEqual(calls, [])
    }))

  it.effect("bwrap installed and working: nothing to say; installed but broken: turns fail, said once", () =>
    Effect.gen(function* () {
      assert.isUndefined(yield* sandboxWarning(config("auto"), probe(true).p))
      const warning = yield* sandboxWarning(config("auto"), probe(true, broken).p)
      assert.include(warning, "bwrap cannot create namespaces here")
      assert.include(warning, "sandbox_unavailable")
      assert.notInclude(warning, "UNISOLATED")
    }))
})
