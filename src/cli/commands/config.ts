import { Command } from "@effect/cli"
import { Console, Effect, Option, Schema } from "effect"
import { printConfig } from "../../config/print.js"
import { PynchyConfig } from "../../config/schema.js"
import { problemLine } from "../../domain/problems.js"
import { checkConfig } from "../../host/preflight.js"

/**
 * Decodes the file and runs every check `start` makes before it opens anything (plugin settings,
 * the gateway catalog with its keys, routes against connections): one line per problem.
 */
const check = Command.make("check", {}, () =>
  Effect.gen(function* () {
    const { file, loaded, problems, warnings } = yield* checkConfig
    const where = Option.getOrElse(file, () => "no config file: embedded defaults")
    const warn = Effect.forEach(warnings, (w) => Console.error(`warning: ${problemLine(w)}`), { discard: true })
    if (problems.length > 0 || Option.isNone(loaded)) {
      yield* Console.error(`${where}: ${problems.length} problem(s)`)
      for (const p of problems) yield* Console.error(`  - ${problemLine(p)}`)
      yield* warn
      process.exitCode = 1
      return
    }
    yield* warn
    const encoded = yield* Schema.encode(PynchyConfig)(loaded.value.config).pipe(Effect.orDie)
    yield* Console.log(`# ${where}`)
    yield* Console.log(`# data dir: ${loaded.value.dataDir}`)
    yield* Console.log(printConfig(encoded).trimEnd())
    yield* Console.log("# ok: every check start makes passed")
  })
).pipe(Command.withDescription("Run every check `start` makes (config, plugin settings, gateway and its keys, routes) without starting anything: the decoded config, or one line per problem; exit 1 on problems."))

export const config = Command.make("config").pipe(
  Command.withDescription("Inspect the configuration."),
  Command.withSubcommands([check])
)
