import { Command, Options } from "@effect/cli"
import { Console, Effect, Layer } from "effect"
import { HostConfig } from "../../config/HostConfig.js"
import { ContextStore } from "../../db/ContextStore.js"
import * as Database from "../../db/Database.js"

const json = Options.boolean("json").pipe(Options.withDescription("Print JSON instead of text."))

/** Conversations with their message counts and context start (the last `/new`), read from the database. */
export const conversations = Command.make("conversations", { json }, ({ json }) =>
  Effect.gen(function* () {
    const config = yield* HostConfig
    if (!Database.mayExist(config)) {
      return yield* json ? Console.log("[]") : Console.log(`no database yet at ${Database.location(config)} (the host has never started here)`)
    }
    const rows = yield* Effect.flatMap(ContextStore, (s) => s.list)
    if (json) return yield* Console.log(JSON.stringify(rows, null, 2))
    if (rows.length === 0) return yield* Console.log("no conversations yet")
    for (const r of rows) {
      const start = r.contextStart === null ? "from the beginning" : `after message ${r.contextStart} (/new)`
      yield* Console.log(`${r.id}  workspace ${r.workspace}  ${r.messages} messages  context ${start}  ${r.summaries} summaries`)
    }
  })
).pipe(
  Command.withDescription("List conversations with their message counts and context start."),
  Command.provide(() => Layer.provideMerge(Layer.provide(ContextStore.layer, Database.layer), HostConfig.layer))
)
