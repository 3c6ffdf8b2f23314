import { BUILTIN_CORE_INFO } from "../protocol/agent-cores.js"
import { definePlugin } from "../contracts/plugin.js"

/** The built-in agent cores the sandbox runner carries: openai, anthropic, scripted. */
export default definePlugin({
  name: "agent-cores",
  description: "Agent cores run inside the sandbox: openai, anthropic (through the gateway) and scripted (offline).",
  agentCore: () => BUILTIN_CORE_INFO.map((c) => ({ name: c.name, description: c.description, builtin: true as const }))
})
