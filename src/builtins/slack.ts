/**
 * A stub of the Slack channel. It stands for every built-in with an optional dependency: the
 * registry lists it with `requires: "@slack/bolt"`, so without that package this module is never
 * imported. Delivery itself is not implemented yet.
 */
import type { Channel } from "../pipeline/channel-contract.js"
import { definePlugin } from "../plugins/contract.js"

export default definePlugin({
  name: "slack",
  description: "Slack channel (stub: needs @slack/bolt; sending is not implemented yet).",
  createChannel: ({ config }) =>
    Object.entries(config.connections)
      .filter(([, settings]) => settings.kind === "slack")
      .map(([name]): Channel => ({
        name,
        idempotentResends: false,
        send: () => Promise.reject(new Error("the slack channel is a stub: sending is not implemented yet"))
      }))
})
