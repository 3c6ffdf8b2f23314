/**
 * The floor of the foundation bench's start figures: the smallest program made of what every
 * pynchy command loads (effect, a Schema decode, @effect/cli, the node platform), bundled as the
 * bench bundles it. What `pynchy --version` takes beyond this is pynchy's own.
 */
import { Command } from "@effect/cli"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Console, Effect, Schema } from "effect"

const Greeting = Schema.Struct({ text: Schema.NonEmptyString, times: Schema.optional(Schema.Int) })

const hello = Command.make("floor", {}, () => Console.log(Schema.decodeUnknownSync(Greeting)({ text: "ready" }).text))

Command.run(hello, { name: "floor", version: "0.0.0" })(process.argv).pipe(Effect.provide(NodeContext.layer), NodeRuntime.runMain)
