/**
 * `pynchy doctor` (the built CLI, a real process) starts each host MCP server once and lists its
 * tools; a sandbox server is not started on the host (where /workspace does not exist, so a correct
 * one always warned), its command and paths are looked up where its sandbox would find them.
 */
import { assert, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { tempDir } from "../support/db.js"
import { runCli } from "../support/cli.js"
import { copyInto, ECHO_SERVER, IN_SANDBOX } from "./fixture.js"

describe("pynchy doctor and MCP servers", () => {
  it("lists the tools of each host server that starts; checks a sandbox server's paths where its sandbox looks, without starting it", async () => {
    const dir = tempDir()
    copyInto(path.join(dir, "data", "workspaces", "main"))
    fs.writeFileSync(path.join(dir, "pynchy.yaml"), [
      "dataDir: data",
      "mcpServers:",
      `  - { name: desk, command: node, args: [${ECHO_SERVER}, ok], where: host, tools: [echo, where] }`,
      `  - { name: notes, command: node, args: [${IN_SANDBOX}, ok], where: sandbox }`,
      "  - { name: lost, command: node, args: [/workspace/missing.mjs], where: sandbox }",
      `  - { name: outside, command: node, args: [${ECHO_SERVER}], where: sandbox }`,
      `  - { name: broken, command: /usr/bin/no-such-mcp-server, where: host }`,
      "workspaces:",
      "  - { id: main, mcpServers: [desk, notes, lost, outside] }",
      ""
    ].join("\n"))
    const r = await runCli(["doctor"], { cwd: dir })
    assert.match(r.stdout, /^ok\s+mcp\s+desk \(host, from config\): 2 tool\(s\): desk__echo, desk__where$/m)
    // A correct sandbox server is ok (it used to warn: started on the host, /workspace/echo-server.mjs was not there).
    assert.match(r.stdout, /^ok\s+mcp\s+notes \(sandbox, from config\): its command and paths are where the sandbox looks \(workspaces: main\); not started/m)
    assert.match(r.stdout, /^fail\s+mcp\s+lost \(sandbox, from config\): workspace 'main': the argument \/workspace\/missing\.mjs is not there/m)
    assert.match(r.stdout, /^fail\s+mcp\s+outside \(sandbox, from config\): workspace 'main': the argument \/.*echo-server\.mjs is outside \/usr and \/workspace/m)
    assert.match(r.stdout, /^fail\s+mcp\s+broken \(host, from config\): mcp_start_failed: MCP server 'broken': command not found/m)
    assert.strictEqual(r.code, 1)
  })
})
