// Runs on the host: names the core, its module and the packages it imports. Both are mounted
// read-only into each turn's sandbox; the module (core.mjs) runs there and starts Claude Code.
import { fileURLToPath } from "node:url"

const here = (p) => fileURLToPath(new URL(p, import.meta.url))

export default {
  name: "claude-code",
  description: "Claude Code as an agent core: runs in the turn's sandbox with no network, reaching only the gateway socket",
  agentCore: () => ({
    name: "claude-code",
    description: "Claude Code (Claude Agent SDK 0.3.332) in the sandbox, through the gateway; resumes its session across turns",
    module: here("./core.mjs"),
    packages: here("./node_modules"),
    api: "messages"
  })
}
