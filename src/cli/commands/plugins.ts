import { Command, Options } from "@effect/cli"
import { Console, Effect } from "effect"
import { HostConfig } from "../../config/HostConfig.js"
import { PluginRegistry } from "../../plugins/PluginRegistry.js"
import { pluginReport, renderText } from "../../plugins/report.js"
import { BUILTINS } from "../../builtins/list.js"

const json = Options.boolean("json").pipe(Options.withDescription("Print JSON instead of text."))

const exitWith = (code: number) => Effect.sync(() => (process.exitCode = code))

/** Discovers and validates plugins without starting anything; exit 1 when startup would fail. */
export const plugins = Command.make("plugins", { json }, ({ json }) =>
  Effect.gen(function* () {
    const { faults, registry } = yield* PluginRegistry.inspect({ builtins: BUILTINS })
    const report = pluginReport(registry, faults)
    yield* Console.log(json ? JSON.stringify(report, null, 2) : renderText(report))
    if (faults.length > 0) yield* exitWith(1)
  }).pipe(
    Effect.provide(HostConfig.layer),
    Effect.catchTags({
      ConfigInvalid: (e) => Console.error(e.message).pipe(Effect.zipRight(exitWith(1))),
      ConfigError: (e) => Console.error(`environment: ${String(e)}`).pipe(Effect.zipRight(exitWith(1)))
    })
  )
).pipe(Command.withDescription("List discovered plugins, where each came from, what it contributes, and what was skipped and why."))
