/**
 * Acceptance of issue 21, item 1, with real processes: a running host (`pynchy start`, the agent
 * in a process sandbox with the scripted core) waits on a human approval of a high-risk host
 * action, and `pynchy send -c cli:x "approve <code>"` from another process decides it: the
 * action runs and the agent's answer is delivered.
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { type HostProject, hostProject, killAllHosts, stopHost } from "../channels/host-process.js"
import { approvalProbePlugin } from "../support/approval-probe.js"
import { waitFor } from "../support/eventually.js"

/** What the host recorded to deliver to the conversation (the `cli` channel prints to the host's stdout). */
const sent = (project: HostProject) =>
  project.query("SELECT kind, text FROM deliveries WHERE conversation_id = 'cli:x' ORDER BY id") as Array<{ kind: string; text: string }>

afterAll(killAllHosts)

describe("approvals across processes (built CLI, real host process)", () => {
  it("pynchy send -c cli:x \"approve <code>\" decides a pending approval of a running host", { timeout: 180_000 }, async () => {
    const project = hostProject({
      yaml: (dir) => ["containerRuntime: process", "workspaces: [{ id: main, agentCore: scripted, actions: [test.drop] }]", `plugins: { modules: [${JSON.stringify(path.join(dir, "probe.mjs"))}] }`]
    })
    const marker = path.join(project.dir, "dropped")
    fs.writeFileSync(path.join(project.dir, "probe.mjs"), approvalProbePlugin(marker))
    const host = await project.start()
    try {
      const asked = await project.cli(["send", "-c", "cli:x", "!tool test.drop {\"table\":\"t\"}"])
      assert.strictEqual(asked.code, 0, asked.stderr)
      assert.include(asked.stdout, "the running host was woken")

      const code = await waitFor("the approval notice", () => {
        const notice = sent(project).find((l) => l.text.startsWith("Approval needed"))
        return notice === undefined ? undefined : /approve ([a-z0-9]{6})/.exec(notice.text)?.[1]
      })
      assert.isFalse(fs.existsSync(marker))

      const approved = await project.cli(["send", "-c", "cli:x", `approve ${code}`])
      assert.strictEqual(approved.code, 0, approved.stderr)
      // Decided by the sending process before it exited, in the shared database.
      const [row] = project.query("SELECT status, decided_by AS decidedBy FROM approvals WHERE id = ?", code)
      assert.strictEqual(row?.decidedBy, "cli")
      assert.include(["approved", "consumed"], row?.status)

      // The host's waiter read the row: the action ran and the agent's answer was delivered.
      const answer = await waitFor("the agent's answer after the approval", () => sent(project).find((l) => l.text.startsWith("tool ")))
      assert.strictEqual(answer.text, "tool ok: \"dropped\"")
      assert.strictEqual(fs.readFileSync(marker, "utf8"), "ran")
      const [used] = project.query("SELECT status FROM approvals WHERE id = ?", code)
      assert.strictEqual(used?.status, "consumed")
    } finally {
      await stopHost(host)
    }
  })
})
