import * as path from "node:path"
import { definePlugin } from "../../contracts/plugin.js"
import { routedRuntimes } from "../../plugins/connections.js"
import { decodeMatrixSettings } from "./settings.js"

/**
 * The built-in Matrix integration: one connection runtime per `kind: matrix` connection that has
 * at least one enabled route. Bad settings throw (the registry reports a plugin fault naming the
 * fields), also for connections without routes.
 */
export default definePlugin({
  name: "matrix",
  description: "Matrix rooms over the Client-Server API (sync loop, durable cursor, idempotent sends; no E2EE)",
  connectionRuntime: ({ config }) =>
    routedRuntimes(config, "matrix", decodeMatrixSettings, () => import("./MatrixRuntime.js").then((m) => (c) => m.makeMatrixRuntime({ ...c, dataDir: path.resolve(config.dataDir), files: config.files })))
})
