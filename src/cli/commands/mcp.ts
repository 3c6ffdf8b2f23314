import { Command, Options } from "@effect/cli"
import { Effect, Layer } from "effect"
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

const layerFor = (options: { readonly agent: string; readonly attachments: "directory" | "database" }) => {
  const database = Layer.provideMerge(Stores.layer, Database.layer)
  const store = options.attachments === "database" ? AttachmentStore.layerDatabase : AttachmentStore.layerDirectoryConfig(options.agent)
  const sessions = Layer.provideMerge(AgentSessions.layer, Layer.merge(store, layerFromEnv))
  // This process never runs turns: a sent message is committed (an approval reply decided), then
  // the running host (if any) is woken.
  return Layer.merge(sessions, ingestClient).pipe(Layer.provideMerge(database), Layer.provideMerge(HostConfig.layer))
}

/** `pynchy mcp`: an MCP server on stdio over the host database and the agent-session runtimes. */
// The MCP SDK (and zod) load only when this command runs: every other command starts without them.
export const mcp = Command.make("mcp", { agent, attachments }, () =>
  Effect.flatMap(Effect.promise(() => import("../../runtimes/agent-session/mcp-server.js")), (m) => m.serveStdio)
).pipe(
  Command.withDescription(
    "Serve MCP on stdio: list conversations, send messages, read turns and replies, attach conversations to agent sessions, inspect, continue, detach."
  ),
  Command.provide(layerFor)
)
