/**
 * Acceptance of issue 21, item 1, with real processes: a running host (`pynchy start`, the agent
 * in a process sandbox with the scripted core) waits on a human approval of a high-risk host
 * action, and `pynchy send -c cli:x "approve <code>"` from another process decides it: the
 * action runs and the agent's answer is delivered.
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { killAllHosts, query, startHost, stopHost } from "../channels/host-process.js"
import { runCli } from "../support/cli.js"
import { tempDir } from "../support/db.js"
import { approvalProbePlugin } from "../support/approval-probe.js"


/** What the host recorded to deliver to the conversation (the `cli` channel prints to the host's stdout). */
const sent = (dir: string) =>
  query(path.join(dir, "data", "pynchy.db"), "SELECT kind, text FROM deliveries WHERE conversation_id = 'cli:x' ORDER BY id") as Array<{ kind: string; text: string }>

/** Polls until `probe` gives a value; past the bound it fails, naming what it waited for (no timing is asserted). */
const until = async <A>(label: string, probe: () => A | undefined, boundMs = 60_000): Promise<A> => {
  const end = Date.now() + boundMs
  while (Date.now() < end) {
    const value = probe()
    if (value !== undefined) return value
    await new Promise((r) => setTimeout(r, 50))
  }
  throw new Error(`waited ${boundMs} ms for ${label}`)
}

afterAll(killAllHosts)

describe("approvals across processes (built CLI, real host process)", () => {
  it("pynchy send -c cli:x \"approve <code>\" decides a pending approval of a running host", { timeout: 180_000 }, async () => {
    const dir = tempDir()
    const marker = path.join(dir, "dropped")
    fs.writeFileSync(path.join(dir, "probe.mjs"), approvalProbePlugin(marker))
    fs.writeFileSync(path.join(dir, "pynchy.yaml"), [
      `dataDir: ${JSON.stringify(path.join(dir, "data"))}`,
      "containerRuntime: process",
      "workspaces: [{ id: main, agentCore: scripted, actions: [test.drop] }]",
      `plugins: { modules: [${JSON.stringify(path.join(dir, "probe.mjs"))}] }`
    ].join("\n") + "\n")
    const env = { PYNCHY_CONFIG: path.join(dir, "pynchy.yaml") }
    const host = await startHost(dir)
    try {
      const asked = await runCli(["send", "-c", "cli:x", "!tool test.drop {\"table\":\"t\"}"], { cwd: dir, env })
      assert.strictEqual(asked.code, 0, asked.stderr)
      assert.include(asked.stdout, "the running host was woken")

      const code = await until("the approval notice", () => {
        const notice = sent(dir).find((l) => l.text.startsWith("Approval needed"))
        return notice === undefined ? undefined : /approve ([a-z0-9]{6})/.exec(notice.text)?.[1]
      })
      assert.isFalse(fs.existsSync(marker))

      const approved = await runCli(["send", "-c", "cli:x", `approve ${code}`], { cwd: dir, env })
      assert.strictEqual(approved.code, 0, approved.stderr)
      // Decided by the sending process before it exited, in the shared database.
      const [row] = query(path.join(dir, "data", "pynchy.db"), "SELECT status, decided_by AS decidedBy FROM approvals WHERE id = ?", code)
      assert.strictEqual(row?.decidedBy, "cli")
      assert.include(["approved", "consumed"], row?.status)

      // The host's waiter read the row: the action ran and the agent's answer was delivered.
      const answer = await until("the agent's answer after the approval", () => sent(dir).find((l) => l.text.startsWith("tool ")))
      assert.strictEqual(answer.text, "tool ok: \"dropped\"")
      assert.strictEqual(fs.readFileSync(marker, "utf8"), "ran")
      const [used] = query(path.join(dir, "data", "pynchy.db"), "SELECT status FROM approvals WHERE id = ?", code)
      assert.strictEqual(used?.status, "consumed")
    } finally {
      await stopHost(host)
    }
  })
})
