import { definePlugin } from "../../contracts/plugin.js"
import { routedRuntimes } from "../../plugins/connections.js"
import { decodeSlackSettings } from "./settings.js"

/**
 * The built-in Slack integration: one connection runtime per `kind: slack` connection that has at
 * least one enabled route. It needs the optional package @slack/bolt (without it the plugin is
 * skipped with an install hint). Bad settings throw, naming the fields.
 */
export default definePlugin({
  name: "slack",
  description: "Slack channels, DMs and threads through @slack/bolt (Socket Mode or signed HTTP events, mrkdwn, long replies in parts, files in and out)",
  connectionRuntime: ({ config }) =>
    routedRuntimes(config, "slack", decodeSlackSettings, () => import("./SlackRuntime.js").then((m) => (c) => m.makeSlackRuntime({ ...c, files: config.files })))
})
