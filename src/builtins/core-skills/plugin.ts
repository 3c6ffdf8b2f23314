import * as path from "node:path"
import { definePlugin } from "../../contracts/plugin.js"
import { hostPackageRoot } from "../../plugins/paths.js"

/** The skills every workspace gets. The folder is found from the package root, so the bundle finds it too. */
export default definePlugin({
  name: "core-skills",
  description: "The core skill every agent has: how to work inside a pynchy workspace.",
  skillPaths: () => [path.join(hostPackageRoot(), "src", "builtins", "core-skills", "core")]
})
