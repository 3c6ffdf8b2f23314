import { Command, Options } from "@effect/cli"
import { Config, ConfigProvider, Console, Effect, Layer, Option, Schema } from "effect"
import * as fs from "node:fs"
import { HostConfig } from "../../config/HostConfig.js"
import * as Database from "../../db/Database.js"
import * as Stores from "../../db/Stores.js"
import { AgentSessions } from "../../runtimes/agent-session/AgentSessions.js"
import { AttachmentStore } from "../../runtimes/agent-session/AttachmentStore.js"
import { layerFromEnv } from "../../runtimes/agent-session/loader.js"
import { ingestClient } from "../ingest-client.js"

const agent = Options.text("agent").pipe(
  Options.withDefault("pynchy"),
  Options.withDescription("Agent id: attachments live in <PYNCHY_ATTACHMENT_STORE_DIR>/<agent>.attachments.json.")
)
const attachments = Options.choice("attachments", ["directory", "database"]).pipe(
  Options.withDefault("directory" as const),
  Options.withDescription("Where attachment lineage lives: the directory store (default) or the host database.")
)

const dataDir = Options.directory("data-dir").pipe(
  Options.optional,
  Options.withDescription("The host's data dir (its database is <dir>/pynchy.db); overrides the config's dataDir.")
)

/** Nothing says where the database is and the default place has none: serving a new, empty one would hide the mistake. */
export class McpDatabaseUnknown extends Schema.TaggedError<McpDatabaseUnknown>()("McpDatabaseUnknown", {
  databaseFile: Schema.String
}) {
  override get message() {
    return `pynchy mcp: no pynchy.yaml here and no database at ${this.databaseFile}; pass --data-dir <dir> (or set PYNCHY_DATA_DIR, or run it where pynchy.yaml is): it does not create an empty database`
  }
}

/**
 * The host config with `--data-dir` applied. A new database is created only where a config file,
 * `--data-dir` or PYNCHY_DATA_DIR says the data dir is; otherwise the database must exist.
 */
const mcpConfig = (dir: Option.Option<string>) =>
  Effect.gen(function* () {
    const loaded = yield* Option.match(dir, {
      onNone: () => HostConfig.load,
      onSome: (d) =>
        Effect.withConfigProvider(HostConfig.load, ConfigProvider.fromMap(new Map([["PYNCHY_DATA_DIR", d]])).pipe(ConfigProvider.orElse(() => ConfigProvider.fromEnv())))
    })
    const fromEnv = yield* Config.option(Config.string("PYNCHY_DATA_DIR"))
    const said = Option.isSome(dir) || Option.isSome(fromEnv) || Option.isSome(loaded.file)
    if (!said && !fs.existsSync(loaded.databaseFile)) return yield* new McpDatabaseUnknown({ databaseFile: loaded.databaseFile })
    return loaded
  })

const layerFor = (options: { readonly agent: string; readonly attachments: "directory" | "database" }, config: HostConfig.Service) => {
  const database = Layer.provideMerge(Stores.layer, Database.layer)
  const store = options.attachments === "database" ? AttachmentStore.layerDatabase : AttachmentStore.layerDirectoryConfig(options.agent)
  const sessions = Layer.provideMerge(AgentSessions.layer, Layer.merge(store, layerFromEnv))
  // This process never runs turns: a sent message is committed (an approval reply decided), then
  // the running host (if any) is woken.
  return Layer.merge(sessions, ingestClient).pipe(Layer.provideMerge(database), Layer.provideMerge(Layer.succeed(HostConfig, config)))
}

/** `pynchy mcp`: an MCP server on stdio over the host database and the agent-session runtimes. */
// The MCP SDK (and zod) load only when this command runs: every other command starts without them.
export const mcp = Command.make("mcp", { agent, attachments, dataDir }, (options) =>
  Effect.gen(function* () {
    const config = yield* mcpConfig(options.dataDir)
    const server = yield* Effect.promise(() => import("../../runtimes/agent-session/mcp-server.js"))
    yield* Effect.provide(server.serveStdio, layerFor(options, config))
  }).pipe(
    Effect.catchTag("McpDatabaseUnknown", (e) => Console.error(e.message).pipe(Effect.zipRight(Effect.sync(() => (process.exitCode = 1)))))
  )
).pipe(
  Command.withDescription(
    "Serve MCP on stdio: list conversations, send messages, read turns and replies, attach conversations to agent sessions, inspect, continue, detach."
  )
)
