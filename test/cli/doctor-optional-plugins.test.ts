/** `pynchy doctor` says whether the optional claude-code plugin is installed, and fails only when a workspace needs it. */
import { assert, describe, it } from "vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { optionalPluginChecks } from "../../src/cli/commands/doctor-checks.js"
import { tempDir } from "../support/db.js"

const line = (root: string, workspaces: Array<{ id: string; agentCore?: string }>) => optionalPluginChecks(workspaces, root).find((c) => c.name === "claude-code")!

describe("doctor: optional first-party plugins", () => {
  it("not installed: ok unless a workspace selects its core, then a fail naming the install command", () => {
    const root = tempDir()
    assert.strictEqual(line(root, [{ id: "main" }]).verdict, "ok")
    assert.include(line(root, [{ id: "main" }]).detail, "not installed")
    const needed = line(root, [{ id: "main" }, { id: "coder", agentCore: "claude-code" }])
    assert.strictEqual(needed.verdict, "fail")
    assert.include(needed.detail, "coder")
    assert.strictEqual(needed.fix, "npm ci --prefix plugins/claude-code")
  })

  it("installed: ok, saying so", () => {
    const root = tempDir()
    const sdk = path.join(root, "plugins", "claude-code", "node_modules", "@anthropic-ai", "claude-agent-sdk")
    fs.mkdirSync(sdk, { recursive: true })
    fs.writeFileSync(path.join(sdk, "package.json"), "{}")
    const c = line(root, [{ id: "coder", agentCore: "claude-code" }])
    assert.strictEqual(c.verdict, "ok")
    assert.include(c.detail, "installed (plugins/claude-code)")
  })
})
