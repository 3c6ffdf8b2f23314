import { definePlugin } from "../../plugins/contract.js"
import { connectionsOfKind } from "../../plugins/connections.js"
import type { NativeConnectionRuntime } from "../../runtimes/native-runtime.js"
import { decodeSlackSettings } from "./settings.js"
import { makeSlackRuntime } from "./SlackRuntime.js"

/**
 * The built-in Slack integration: one connection runtime per `kind: slack` connection that has at
 * least one enabled route. It needs the optional package @slack/bolt (without it the plugin is
 * skipped with an install hint). Bad settings throw, naming the fields.
 */
export default definePlugin({
  name: "slack",
  description: "Slack channels, DMs and threads through @slack/bolt (Socket Mode or signed HTTP events, mrkdwn, long replies in parts, files in and out)",
  connectionRuntime: ({ config }) => {
    const runtimes: Array<NativeConnectionRuntime> = []
    for (const { name, raw, routed } of connectionsOfKind(config, "slack")) {
      const settings = decodeSlackSettings(name, raw)
      if (routed) runtimes.push(makeSlackRuntime({ name, settings, files: config.files }))
    }
    return runtimes
  }
})
