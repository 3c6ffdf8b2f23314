import { Command, Options } from "@effect/cli"
import { Console, Effect, Layer, Option } from "effect"
import { HostConfig } from "../../config/HostConfig.js"
import { ROLLBACK_EXIT_CODE } from "../../host/DeployRollback.js"
import type { RuntimeEntry } from "../../runtimes/ConnectionRuntimes.js"
import { bwrapProbe, logSandboxWarning } from "../../sandbox/select.js"
import { embeddedChat } from "./chat.js"

/**
 * The first SIGINT/SIGTERM starts the orderly shutdown (runMain interrupts, layers close in
 * reverse); it must end within the deadline, and a second signal ends the process at once.
 */
const guardShutdown = (deadlineMs: number) =>
  Effect.sync(() => {
    let signals = 0
    const onSignal = () => {
      signals++
      if (signals === 1) {
        setTimeout(() => {
          process.stderr.write(`shutdown did not finish within ${deadlineMs} ms: forcing exit\n`)
          process.exit(1)
        }, deadlineMs).unref()
      } else {
        process.stderr.write("second signal: forcing exit\n")
        process.exit(130)
      }
    }
    process.on("SIGINT", onSignal)
    process.on("SIGTERM", onSignal)
  })

const headless = Options.boolean("headless").pipe(
  Options.withDescription("Run without the chat even in a terminal, logging to stderr (as when stdin or stdout is not a terminal).")
)

/**
 * Runs a host stack until SIGINT/SIGTERM. In an interactive terminal (stdin and stdout a TTY, no
 * --headless) it opens the chat there, with the host's log in a file; otherwise it runs headless,
 * logging to stderr. A start rolled back during a deploy exits 75.
 * Agents that would run unisolated (`auto` without bwrap) get one WARN line before the host
 * starts. Turns that would fail because bwrap cannot start a sandbox get one too, once the probe
 * (a real sandbox, ~100 ms) answers: it starts once the host is ready.
 */
export const start = <E>(makeHost: (extra: ReadonlyArray<RuntimeEntry>) => Layer.Layer<never, E>) =>
  Command.make("start", { headless }, ({ headless }) =>
    Effect.gen(function* () {
      if (!headless && process.stdin.isTTY === true && process.stdout.isTTY === true) return yield* embeddedChat(makeHost, "default")
      const config = yield* Effect.option(HostConfig.load)
      yield* guardShutdown(Option.match(config, { onNone: () => 15_000, onSome: (c) => c.config.limits.shutdownTimeoutMs }))
      const warn = Option.match(config, { onNone: () => Effect.void, onSome: (c) => logSandboxWarning(c.config) })
      const bwrapInstalled = bwrapProbe.installed()
      if (!bwrapInstalled) yield* warn
      return yield* Effect.scoped(Effect.gen(function* () {
        yield* Layer.build(makeHost([]))
        // Launching the probe costs the host's thread ~25 ms (spawn, the seccomp program): once ready.
        if (bwrapInstalled) yield* Effect.forkScoped(warn)
        return yield* Effect.never
      }))
    }).pipe(
      Effect.catchIf(
        (e): e is E & { _tag: "StartupRolledBack"; message: string } => typeof e === "object" && e !== null && "_tag" in e && e._tag === "StartupRolledBack",
        (e) => Console.error(e.message).pipe(Effect.zipRight(Effect.sync(() => (process.exitCode = ROLLBACK_EXIT_CODE))))
      ),
      Effect.asVoid
    )
  ).pipe(Command.withDescription("Run the host until interrupted (Ctrl-C): in a terminal with the chat open, headless otherwise (--headless, or no TTY)."))
