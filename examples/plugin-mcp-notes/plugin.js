// An MCP tool server for agents, contributed by a plugin (docs/plugins/hooks.md, mcpServerSpec).
// `where: "host"`: started once on the host, shared by every turn, its calls under host policy
// (risk `low`: no approval; `high` would ask a human). A workspace offers its tools to the agent
// as notes__add_note and notes__list_notes once it lists `mcpServers: [notes]`.
import { fileURLToPath } from "node:url"

export default {
  name: "mcp-notes",
  version: "0.1.0",
  description: "A notes MCP server: add_note and list_notes, kept in NOTES_FILE.",
  mcpServerSpec: () => ({
    name: "notes",
    command: "node",
    args: [fileURLToPath(new URL("./server.mjs", import.meta.url))],
    where: "host",
    // The values of these host variables are passed to the server; nothing else of the host's env is.
    env: ["NOTES_FILE"],
    risk: "low",
    timeoutSeconds: 10
  })
}
