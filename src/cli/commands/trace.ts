import { Args, Command, Options } from "@effect/cli"
import { Console, Effect, Layer, Option } from "effect"
import { HostConfig } from "../../config/HostConfig.js"
import * as Database from "../../db/Database.js"
import { trace as traceOf } from "../../events/trace.js"
import { render } from "../../events/trace-verdict.js"
import { readStatusFile } from "../../host/status-file.js"

const target = Args.text({ name: "message id | platform event id | conversation" }).pipe(
  Args.withDescription("A message id, a platform event id, or a conversation (connection:place: its latest message)."),
  Args.optional
)
const last = Options.boolean("last").pipe(Options.withDescription("Trace the latest inbound message (when no target is given)."))
const json = Options.boolean("json").pipe(Options.withDescription("Print JSON instead of text."))

/** The story of one message and why it got (or did not get) an answer, read from the database. */
export const trace = Command.make("trace", { target, last, json }, ({ json, last, target }) =>
  Effect.gen(function* () {
    const config = yield* HostConfig
    if (!Database.mayExist(config)) {
      return yield* Console.log(`no database yet at ${Database.location(config)} (the host has never started here)`)
    }
    if (Option.isNone(target) && !last) return yield* Console.log("name a message id, a platform event id or a conversation, or pass --last")
    const live = readStatusFile(config.dataDir)
    const story = yield* traceOf(Option.getOrUndefined(target), live !== null && live.state !== "stopped")
    if (json) return yield* Console.log(JSON.stringify(story, null, 2))
    for (const line of render(story)) yield* Console.log(line)
  })
).pipe(
  Command.withDescription("Tell the story of one message: route, turns, sandbox, gateway calls, deliveries, approvals, and why it got no answer."),
  Command.provide(() => Layer.provideMerge(Database.layer, HostConfig.layer))
)
