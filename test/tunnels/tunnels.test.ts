/**
 * Tunnels: plugin detectors that are present, absent, throw or hang (TestClock: the deadline
 * reports it absent), the first present URL as the public one; the built-in Tailscale and
 * cloudflared detectors say absent where their tool is not installed; `pynchy status` and
 * `pynchy doctor` (the built CLI) show a plugin tunnel's URL.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, TestClock } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { cloudflared, tailscale } from "../../src/builtins/tunnels.js"
import type { Tunnel } from "../../src/contracts/plugin.js"
import { detectTunnels, publicUrl } from "../../src/tunnels/detect.js"
import { runCli } from "../support/cli.js"
import { tempDir } from "../support/db.js"
import { hasCommand } from "../support/system.js"

const of = (value: Tunnel) => ({ name: value.name, plugin: "test", value })

describe("tunnels", () => {
  it.effect("present, absent, throwing and hanging detectors each get a report; the first present URL is the public one", () =>
    Effect.gen(function* () {
      const tunnels = [
        of({ name: "absent", detect: async () => ({ present: false, detail: "not here" }) }),
        of({ name: "throws", detect: () => { throw new Error("boom") } }),
        of({ name: "hangs", detect: () => new Promise(() => {}) }),
        of({ name: "nonsense", detect: async () => ({ present: "yes" }) }),
        of({ name: "mine", detect: async () => ({ present: true, url: "https://host.example.test", detail: "test tunnel" }) }),
        of({ name: "second", detect: async () => ({ present: true, url: "https://second.example.test", detail: "later" }) })
      ]
      const fiber = yield* Effect.fork(detectTunnels(tunnels))
      yield* TestClock.adjust("5 seconds")
      const reports = yield* Fiber.join(fiber)
      assert.deepStrictEqual(reports.map((r) => [r.name, r.present, r.code ?? "ok"]), [
        ["absent", false, "ok"],
        ["throws", false, "detect_failed"],
        ["hangs", false, "detect_timeout"],
        ["nonsense", false, "invalid_answer"],
        ["mine", true, "ok"],
        ["second", true, "ok"]
      ])
      assert.include(reports[1]!.detail, "boom")
      assert.strictEqual(reports[2]!.detail, "detect() gave no answer within 5s")
      assert.strictEqual(publicUrl(reports)?.url, "https://host.example.test")
      assert.isUndefined(publicUrl(reports.slice(0, 4)))
    }))

  it.effect("the built-in detectors say absent where their tool is not installed (nothing is installed for them)", () =>
    Effect.gen(function* () {
      const reports = yield* detectTunnels([of(tailscale), of(cloudflared)])
      if (!hasCommand("tailscale")) assert.deepStrictEqual(reports[0], { name: "tailscale", plugin: "test", present: false, detail: "tailscale is not installed" })
      if (!hasCommand("cloudflared")) assert.deepStrictEqual(reports[1], { name: "cloudflared", plugin: "test", present: false, detail: "cloudflared is not installed" })
      for (const r of reports) assert.isUndefined(r.code)
    }))

  it("pynchy status and pynchy doctor show the plugin tunnel's URL", async () => {
    const dir = tempDir()
    fs.writeFileSync(path.join(dir, "tunnel-plugin.mjs"), [
      "export default {",
      "  name: 'test-tunnels',",
      "  tunnel: () => [",
      "    { name: 'gone', detect: async () => ({ present: false, detail: 'not here' }) },",
      "    { name: 'mine', detect: async () => ({ present: true, url: 'https://host.example.test', detail: 'test tunnel' }) },",
      "    { name: 'broken', detect: () => { throw new Error('boom') } }",
      "  ]",
      "}",
      ""
    ].join("\n"))
    fs.writeFileSync(path.join(dir, "pynchy.yaml"), "plugins:\n  modules: [./tunnel-plugin.mjs]\n")
    const status = await runCli(["status"], { cwd: dir })
    assert.match(status.stdout, /^tunnel {4}https:\/\/host\.example\.test \(mine: test tunnel\)$/m)
    const doctor = await runCli(["doctor"], { cwd: dir })
    assert.match(doctor.stdout, /^ok\s+tunnel\s+public URL https:\/\/host\.example\.test \(mine\)$/m)
    assert.match(doctor.stdout, /^ok\s+tunnel\s+gone \(from plugin 'test-tunnels'\): absent: not here$/m)
    assert.match(doctor.stdout, /^warn\s+tunnel\s+broken \(from plugin 'test-tunnels'\): absent: detect\(\) failed: Error: boom/m)
  })
})
