import { BUILTIN_CORES } from "../../agent/cores/index.js"
import { definePlugin } from "../contract.js"

/** The built-in agent cores the sandbox runner carries: openai, anthropic, scripted. */
export default definePlugin({
  name: "agent-cores",
  description: "Agent cores run inside the sandbox: openai, anthropic (through the gateway) and scripted (offline).",
  agentCore: () => BUILTIN_CORES.map((c) => ({ name: c.name, description: c.description, run: c.run }))
})
