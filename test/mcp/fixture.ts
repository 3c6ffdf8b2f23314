/** The stdio MCP server fixture (test/fixtures/mcp/echo-server.mjs) and copies of it where a sandbox can reach it. */
import * as fs from "node:fs"
import * as path from "node:path"

export const ECHO_SERVER = path.resolve(import.meta.dirname, "../fixtures/mcp/echo-server.mjs")

/** Copies the fixture into a workspace folder, where a sandbox server can start it as /workspace/echo-server.mjs. */
export const copyInto = (workspaceDir: string) => {
  fs.mkdirSync(workspaceDir, { recursive: true })
  fs.copyFileSync(ECHO_SERVER, path.join(workspaceDir, "echo-server.mjs"))
}

export const IN_SANDBOX = "/workspace/echo-server.mjs"

/** A sandbox launch of the fixture in `mode` (ok, crash, hang, dead), as the host writes it into the turn spec. */
export const sandboxLaunch = (name: string, mode: string, timeoutSeconds = 30) => ({ name, command: "node", args: [IN_SANDBOX, mode], env: {}, timeoutSeconds })
