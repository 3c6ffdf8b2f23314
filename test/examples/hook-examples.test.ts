/**
 * The examples of the mcpServerSpec, tunnel and workspaceSpec hooks, run as their READMEs say,
 * through the built CLI: the notes server starts and lists its tools, the PUBLIC_URL tunnel is
 * shown by `pynchy status`, the standup workspace is listed and its schedule passes config check.
 */
import { assert, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { runCli } from "../support/cli.js"
import { tempDir } from "../support/db.js"

const example = (name: string) => path.resolve(import.meta.dirname, "../../examples", name)

const withConfig = (yaml: string) => {
  const dir = tempDir()
  fs.writeFileSync(path.join(dir, "pynchy.yaml"), yaml)
  return dir
}

describe("hook examples", () => {
  it("plugin-mcp-notes: doctor starts the notes server and lists its tools", async () => {
    const dir = withConfig("workspaces:\n  - { id: main, mcpServers: [notes] }\n")
    const r = await runCli(["doctor"], { cwd: dir, env: { PYNCHY_PLUGINS: example("plugin-mcp-notes") } })
    assert.match(r.stdout, /^ok\s+mcp\s+notes \(host, from plugin 'mcp-notes'\): 2 tool\(s\): notes__add_note, notes__list_notes$/m)
  })

  it("plugin-tunnel-env: status shows PUBLIC_URL; doctor says absent without it", async () => {
    const dir = withConfig("")
    const plugins = { PYNCHY_PLUGINS: example("plugin-tunnel-env") }
    assert.match((await runCli(["status"], { cwd: dir, env: { ...plugins, PUBLIC_URL: "https://pynchy.example.org" } })).stdout, /^tunnel {4}https:\/\/pynchy\.example\.org \(public-url: from PUBLIC_URL\)$/m)
    assert.match((await runCli(["doctor"], { cwd: dir, env: plugins })).stdout, /^ok\s+tunnel\s+public-url \(from plugin 'tunnel-env'\): absent: PUBLIC_URL is not set$/m)
  })

  it("plugin-workspace-standup: listed by pynchy plugins, accepted by config check, turned off by enabled: false", async () => {
    const env = { PYNCHY_PLUGINS: example("plugin-workspace-standup") }
    const dir = withConfig("")
    assert.match((await runCli(["plugins"], { cwd: dir, env })).stdout, /^ {2}workspaceSpec {2}standup$/m)
    assert.strictEqual((await runCli(["config", "check"], { cwd: dir, env })).code, 0)
    const clash = withConfig("workspaces:\n  - { id: main }\n  - { id: standup }\n")
    const r = await runCli(["config", "check"], { cwd: clash, env })
    assert.strictEqual(r.code, 1)
    assert.include(r.stderr + r.stdout, "declared by config and by plugin 'workspace-standup'")
    assert.strictEqual((await runCli(["config", "check"], { cwd: withConfig("workspaces:\n  - { id: main }\n  - { id: standup, enabled: false }\n"), env })).code, 0)
  })
})
