/** `pynchy doctor` (the built CLI, a real process) starts each MCP server once and lists its tools. */
import { assert, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { tempDir } from "../support/db.js"
import { runCli } from "../support/cli.js"
import { ECHO_SERVER } from "./fixture.js"

describe("pynchy doctor and MCP servers", () => {
  it("lists the tools of each server that starts; a host server that does not start fails the check, a sandbox one warns", async () => {
    const dir = tempDir()
    fs.writeFileSync(path.join(dir, "pynchy.yaml"), [
      "mcpServers:",
      `  - { name: desk, command: node, args: [${ECHO_SERVER}, ok], where: host, tools: [echo, where] }`,
      `  - { name: notes, command: node, args: [${ECHO_SERVER}, dead], where: sandbox }`,
      `  - { name: broken, command: /usr/bin/no-such-mcp-server, where: host }`,
      "workspaces:",
      "  - { id: main, mcpServers: [desk, notes] }",
      ""
    ].join("\n"))
    const r = await runCli(["doctor"], { cwd: dir })
    assert.match(r.stdout, /^ok\s+mcp\s+desk \(host, from config\): 2 tool\(s\): desk__echo, desk__where$/m)
    assert.match(r.stdout, /^warn\s+mcp\s+notes \(sandbox, from config\): mcp_(server_exited|start_failed): .*\(started on this host for the check\)/m)
    assert.match(r.stdout, /^fail\s+mcp\s+broken \(host, from config\): mcp_start_failed: MCP server 'broken': command not found/m)
    assert.strictEqual(r.code, 1)
  })
})
