import * as path from "node:path"
import { definePlugin } from "../../contracts/plugin.js"
import { routedRuntimes } from "../../plugins/connections.js"
import { decodeHttpSettings } from "./settings.js"

/**
 * The built-in HTTP API: one connection runtime per `kind: http` connection that has an enabled
 * route. Bad settings throw (the registry reports a plugin fault naming the fields).
 */
export default definePlugin({
  name: "http",
  description: "HTTP API on loopback: post messages, read and stream replies (bearer tokens, stored hashed)",
  connectionRuntime: ({ config }) =>
    routedRuntimes(config, "http", decodeHttpSettings, () => import("./HttpRuntime.js").then((m) => (c) => m.makeHttpRuntime({ ...c, dataDir: path.resolve(config.dataDir), files: config.files })))
})
