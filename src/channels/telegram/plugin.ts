import * as path from "node:path"
import { definePlugin } from "../../contracts/plugin.js"
import { routedRuntimes } from "../../plugins/connections.js"
import { decodeTelegramSettings } from "./settings.js"

/**
 * The built-in Telegram integration: one connection runtime per `kind: telegram` connection that
 * has at least one enabled route. It needs the optional package grammy (without it the plugin is
 * skipped with an install hint). Bad settings throw, naming the fields.
 */
export default definePlugin({
  name: "telegram",
  description: "Telegram chats through the Bot API (grammy; long polling with a durable offset, or a webhook; MarkdownV2, long replies in parts)",
  connectionRuntime: ({ config }) =>
    routedRuntimes(config, "telegram", decodeTelegramSettings, () => import("./TelegramRuntime.js").then((m) => (c) => m.makeTelegramRuntime({ ...c, dataDir: path.resolve(config.dataDir), files: config.files })))
})
