import { definePlugin } from "../contracts/plugin.js"
import * as Bwrap from "../sandbox/runtimes/bwrap.js"
import * as Docker from "../sandbox/runtimes/docker.js"
import * as Process from "../sandbox/runtimes/process.js"

/** The built-in container runtimes: bwrap (isolating, the default where it works), process (no isolation), docker. */
export default definePlugin({
  name: "sandbox-runtimes",
  description: "Container runtimes for agent turns: bwrap, process (no isolation) and docker.",
  containerRuntime: () => [Bwrap.make(), Process.make(), Docker.make()]
})
