import { Command } from "@effect/cli"
import { Effect, Layer } from "effect"

/** Runs a host stack until SIGINT/SIGTERM; runMain interrupts, and the layers close in reverse. */
export const start = <E>(host: Layer.Layer<never, E>) =>
  Command.make("start", {}, () => Layer.launch(host).pipe(Effect.asVoid)).pipe(
    Command.withDescription("Run the host on the default layer stack until interrupted (Ctrl-C).")
  )
