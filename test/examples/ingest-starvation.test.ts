import { assert, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { tempDir } from "../support/temp.js"
import { startHost, stopGently, until } from "./support.js"

/**
 * A host finding from the JSONL example (see docs/connection-runtimes.md): `ingestMessage`
 * resolves on the microtask queue, so a runtime that awaits it in a loop over a backlog (the
 * natural shape of a provider loop) never gives the event loop a macrotask turn. Every timer and
 * I/O callback of the host waits until the backlog is drained: here, the host's own 10 ms
 * readiness re-poll. No wall clock is asserted: the probe counts how many ingests completed
 * before a timer could run; with a fair host that is far below the backlog.
 */
const BACKLOG = 400

const probePlugin = (result: string) => `
import * as fs from "node:fs"
export default {
  name: "backlog-probe",
  connectionRuntime: () => {
    let polls = 0
    let done = 0
    let atSecondPoll = -1
    let timerAt = -1
    return [{
      name: "probe",
      async start(context) {
        setTimeout(() => { timerAt = done }, 0)
        void (async () => {
          for (let i = 0; i < ${BACKLOG}; i++) {
            await context.ingestMessage({ connection: "probe", place: "p", providerEventId: "e" + i, sender: "s", text: "m" + i })
            done++
          }
          // Written once timers have had their turn, so both counts are set.
          setTimeout(() => fs.writeFileSync(${JSON.stringify(result)}, JSON.stringify({ atSecondPoll, timerAt })), 100)
        })()
      },
      async close() {},
      // Not ready at the first poll: the host re-polls after a 10 ms timer.
      isReady() {
        polls++
        if (polls === 2) atSecondPoll = done
        return polls >= 2
      }
    }]
  }
}
`

describe("host: a runtime awaiting ingestMessage in a loop", () => {
  it("does not hold off the host's timers until its backlog is drained", { timeout: 120_000 }, async () => {
    const dir = tempDir("pynchy-starve-")
    const result = path.join(dir, "result.json")
    fs.writeFileSync(path.join(dir, "probe.mjs"), probePlugin(result))
    const config = path.join(dir, "pynchy.yaml")
    fs.writeFileSync(config, [
      `dataDir: ${dir}`,
      "workspaces: [{ id: main, agentCore: scripted }]",
      "routes: [{ connection: probe, place: '*', workspace: main }]",
      `plugins: { modules: [${path.join(dir, "probe.mjs")}] }`
    ].join("\n") + "\n")
    const host = await startHost(config)
    try {
      const { atSecondPoll, timerAt } = await until("the probe's backlog", () =>
        fs.existsSync(result) ? (JSON.parse(fs.readFileSync(result, "utf8")) as { atSecondPoll: number; timerAt: number }) : undefined)
      assert.isBelow(timerAt, BACKLOG, "a setTimeout(0) ran only after the whole backlog was ingested")
      assert.isBelow(atSecondPoll, BACKLOG, "the host's readiness re-poll (a 10 ms timer) ran only after the whole backlog")
    } finally {
      assert.strictEqual(await stopGently(host), 0)
    }
  })
})
