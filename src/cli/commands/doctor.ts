import { Command } from "@effect/cli"
import { Effect } from "effect"

/** One line per check: ok, warn or fail, plus how to fix. The checks load when the command runs. */
export const doctor = Command.make("doctor", {}, () => Effect.flatMap(Effect.promise(() => import("./doctor-checks.js")), (checks) => checks.runDoctor)).pipe(
  Command.withDescription("Check this machine and config: one line per check (ok, warn, fail) with how to fix.")
)
