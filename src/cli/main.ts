import { Command } from "@effect/cli"
import type { Layer } from "effect"
import { VERSION } from "../version.js"
import { config } from "./commands/config.js"
import { doctor } from "./commands/doctor.js"
import { start } from "./commands/start.js"
import { status } from "./commands/status.js"

/** What the commands run on; the composition (layers/) decides. */
export interface Stacks<E> {
  /** The whole host, held open by `start`. */
  readonly host: Layer.Layer<never, E>
}

export const makeCli = <E>(stacks: Stacks<E>) =>
  Command.run(
    Command.make("pynchy").pipe(
      Command.withDescription("A host for a personal AI assistant."),
      Command.withSubcommands([start(stacks.host), status, config, doctor])
    ),
    { name: "pynchy", version: VERSION }
  )
