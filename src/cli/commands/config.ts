import { Command } from "@effect/cli"
import { Console, Effect, Option, Schema } from "effect"
import { printConfig } from "../../config/print.js"
import { HostConfig } from "../../config/HostConfig.js"
import { PynchyConfig } from "../../config/schema.js"

const check = Command.make("check", {}, () =>
  Effect.gen(function* () {
    const loaded = yield* HostConfig.load
    const encoded = yield* Schema.encode(PynchyConfig)(loaded.config).pipe(Effect.orDie)
    // Provider keys are never in the file (only env var names and paths); say whether each resolves.
    const providers = loaded.config.providers.map((p) => ({
      name: p.name,
      key: p.apiKeyEnv !== undefined ? (process.env[p.apiKeyEnv] ? `set (${p.apiKeyEnv}, hidden)` : `MISSING (${p.apiKeyEnv})`) :
        p.apiKeyFile !== undefined ? `file ${p.apiKeyFile}` : "none"
    }))
    yield* Console.log(`# ${Option.getOrElse(loaded.file, () => "no config file: embedded defaults")}`)
    yield* Console.log(`# data dir: ${loaded.dataDir}`)
    yield* Console.log(printConfig(encoded).trimEnd())
    if (providers.length > 0) yield* Console.log(`# provider keys: ${providers.map((p) => `${p.name}: ${p.key}`).join(", ")}`)
  }).pipe(
    Effect.catchTags({
      ConfigInvalid: (e) => Console.error(e.message).pipe(Effect.zipRight(Effect.sync(() => (process.exitCode = 1)))),
      ConfigError: (e) => Console.error(`environment: ${String(e)}`).pipe(Effect.zipRight(Effect.sync(() => (process.exitCode = 1))))
    })
  )
).pipe(Command.withDescription("Print the decoded config (secrets hidden), or every problem with its path; exit 1 on problems."))

export const config = Command.make("config").pipe(
  Command.withDescription("Inspect the configuration."),
  Command.withSubcommands([check])
)
