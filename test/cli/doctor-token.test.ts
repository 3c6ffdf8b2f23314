/** `pynchy doctor` names where a turn's tools can reach its gateway token: plugin cores (by design) and docker. */
import { assert, describe, it } from "vitest"
import { tokenExposureChecks } from "../../src/cli/commands/doctor-checks.js"

describe("doctor: turn token exposure", () => {
  it("names a workspace whose plugin core runs its own tools with the token, warns for docker, says nothing for built-in cores under bwrap", () => {
    const checks = tokenExposureChecks({
      containerRuntime: "auto",
      workspaces: [
        { id: "main" },
        { id: "chat", agentCore: "openai" },
        { id: "coder", agentCore: "claude-code" },
        { id: "boxed", agentCore: "anthropic", sandbox: { runtime: "docker" } }
      ]
    })
    assert.deepStrictEqual(checks.map((c) => [c.name, c.verdict]), [["token", "ok"], ["token", "warn"]])
    assert.include(checks[0]!.detail, "workspace coder: agent core claude-code runs its own tools with the turn token")
    assert.include(checks[0]!.detail, "docs/agent-cores.md")
    assert.include(checks[1]!.detail, "workspace boxed")
    assert.deepStrictEqual(tokenExposureChecks({ containerRuntime: "docker", workspaces: [{ id: "main" }] }).map((c) => c.verdict), ["warn"])
  })
})
