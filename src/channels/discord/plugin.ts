import * as path from "node:path"
import { definePlugin } from "../../plugins/contract.js"
import { connectionsOfKind } from "../../plugins/connections.js"
import type { NativeConnectionRuntime } from "../../runtimes/native-runtime.js"
import { makeDiscordRuntime } from "./DiscordRuntime.js"
import { decodeDiscordSettings } from "./settings.js"

/**
 * The built-in Discord integration: one connection runtime per `kind: discord` connection that
 * has at least one enabled route. It needs the optional package discord.js (without it the plugin
 * is skipped with an install hint). Bad settings throw, naming the fields.
 */
export default definePlugin({
  name: "discord",
  description: "Discord channels, threads and DMs through discord.js (gateway with RESUME, catch-up from a durable cursor, nonce-deduplicated sends, long replies in parts, files in and out)",
  connectionRuntime: ({ config }) => {
    const runtimes: Array<NativeConnectionRuntime> = []
    for (const { name, raw, routed } of connectionsOfKind(config, "discord")) {
      const settings = decodeDiscordSettings(name, raw)
      if (routed) runtimes.push(makeDiscordRuntime({ name, settings, dataDir: path.resolve(config.dataDir), files: config.files }))
    }
    return runtimes
  }
})
