import { Command } from "@effect/cli"
import { Console, Effect, Option, Schema } from "effect"
import { stringify } from "yaml"
import { HostConfig } from "../../config/HostConfig.js"
import { PynchyConfig } from "../../config/schema.js"
import { problemLine } from "../../domain/problems.js"
import { preflight } from "../../host/preflight.js"

const fail = (lines: ReadonlyArray<string>) =>
  Effect.forEach(lines, (l) => Console.error(l), { discard: true }).pipe(Effect.zipRight(Effect.sync(() => (process.exitCode = 1))))

/**
 * Decodes the file and runs every check `start` makes before it opens anything (plugin settings,
 * the gateway catalog with its keys, routes against connections): one line per problem.
 */
const check = Command.make("check", {}, () =>
  Effect.gen(function* () {
    const loaded = yield* HostConfig.load
    const problems = yield* preflight.pipe(Effect.provideService(HostConfig, loaded))
    const where = Option.getOrElse(loaded.file, () => "no config file: embedded defaults")
    if (problems.length > 0) return yield* fail([`${where}: ${problems.length} problem(s)`, ...problems.map((p) => `  - ${problemLine(p)}`)])
    const encoded = yield* Schema.encode(PynchyConfig)(loaded.config).pipe(Effect.orDie)
    yield* Console.log(`# ${where}`)
    yield* Console.log(`# data dir: ${loaded.dataDir}`)
    yield* Console.log(stringify(encoded).trimEnd())
    yield* Console.log("# ok: every check start makes passed")
  }).pipe(
    Effect.catchTags({
      ConfigInvalid: (e) => fail([e.message]),
      ConfigError: (e) => fail([`environment: ${String(e)}`])
    })
  )
).pipe(Command.withDescription("Run every check `start` makes (config, plugin settings, gateway and its keys, routes) without starting anything: the decoded config, or one line per problem; exit 1 on problems."))

export const config = Command.make("config").pipe(
  Command.withDescription("Inspect the configuration."),
  Command.withSubcommands([check])
)
