// The plugin runs on the host: it only names the core and where its module is. The module itself
// (core.mjs) is mounted read-only into each turn's sandbox and imported there by the runner.
import { fileURLToPath } from "node:url"

export default {
  name: "shout",
  description: "An agent core that asks the model, keeps the answer in the workspace and replies in capitals.",
  agentCore: () => ({
    name: "shout",
    description: "Asks the model through the gateway, writes last-shout.txt, replies in capitals",
    module: fileURLToPath(new URL("./core.mjs", import.meta.url)),
    api: "chat"
  })
}
