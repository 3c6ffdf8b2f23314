import * as path from "node:path"
import { definePlugin } from "../../contracts/plugin.js"
import { routedRuntimes } from "../../plugins/connections.js"
import { decodeDiscordSettings } from "./settings.js"

/**
 * The built-in Discord integration: one connection runtime per `kind: discord` connection that
 * has at least one enabled route. It needs the optional package discord.js (without it the plugin
 * is skipped with an install hint). Bad settings throw, naming the fields.
 */
export default definePlugin({
  name: "discord",
  description: "Discord channels, threads and DMs through discord.js (gateway with RESUME, catch-up from a durable cursor, nonce-deduplicated sends, long replies in parts, files in and out)",
  connectionRuntime: ({ config }) =>
    routedRuntimes(config, "discord", decodeDiscordSettings, () => import("./DiscordRuntime.js").then((m) => (c) => m.makeDiscordRuntime({ ...c, dataDir: path.resolve(config.dataDir), files: config.files })))
})
