import * as path from "node:path"
import type { NativeConnectionRuntime } from "../../runtimes/native-runtime.js"
import { definePlugin } from "../../plugins/contract.js"
import { makeMatrixRuntime } from "./MatrixRuntime.js"
import { connectionsOfKind } from "../../plugins/connections.js"
import { decodeMatrixSettings } from "./settings.js"

/**
 * The built-in Matrix integration: one connection runtime per `kind: matrix` connection that has
 * at least one enabled route. Bad settings throw (the registry reports a plugin fault naming the
 * fields), also for connections without routes.
 */
export default definePlugin({
  name: "matrix",
  description: "Matrix rooms over the Client-Server API (sync loop, durable cursor, idempotent sends; no E2EE)",
  connectionRuntime: ({ config }) => {
    const runtimes: Array<NativeConnectionRuntime> = []
    for (const { name, raw, routed } of connectionsOfKind(config, "matrix")) {
      // Decoded even when unrouted, so bad settings are reported either way.
      const settings = decodeMatrixSettings(name, raw)
      if (routed) runtimes.push(makeMatrixRuntime({ name, settings, dataDir: path.resolve(config.dataDir), files: config.files }))
    }
    return runtimes
  }
})
