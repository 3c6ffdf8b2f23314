import * as path from "node:path"
import { definePlugin } from "../../plugins/contract.js"
import { type HttpRuntime, makeHttpRuntime } from "./HttpRuntime.js"
import { connectionsOfKind } from "../../plugins/connections.js"
import { decodeHttpSettings } from "./settings.js"

/**
 * The built-in HTTP API: one connection runtime per `kind: http` connection that has an enabled
 * route. Bad settings throw (the registry reports a plugin fault naming the fields).
 */
export default definePlugin({
  name: "http",
  description: "HTTP API on loopback: post messages, read and stream replies (bearer tokens, stored hashed)",
  connectionRuntime: ({ config }) => {
    const runtimes: Array<HttpRuntime> = []
    for (const { name, raw, routed } of connectionsOfKind(config, "http")) {
      // Decoded even when unrouted, so bad settings are reported either way.
      const settings = decodeHttpSettings(name, raw)
      if (routed) runtimes.push(makeHttpRuntime({ name, settings, dataDir: path.resolve(config.dataDir), files: config.files }))
    }
    return runtimes
  }
})
