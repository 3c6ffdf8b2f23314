import { assert, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { BUILTINS } from "../../src/builtins/list.js"
import { installCommand, isInstalled, OPTIONAL_PLUGINS } from "../../src/plugins/first-party.js"
import { hostPackageRoot, installedPackageDir } from "../../src/plugins/paths.js"
import { runCli } from "../support/cli.js"
import { EXAMPLE, pluginModule, tempProject, writePackage } from "./support.js"

// The optional claude-code plugin (plugins/claude-code) is loaded where it is installed, else skipped.
const claudeCode = OPTIONAL_PLUGINS.find((p) => p.name === "claude-code")!
const claudeCodeInstalled = isInstalled(hostPackageRoot(), claudeCode)
/** The built-ins the host package loads: those without an optional package, and those whose package is installed. */
const loaded = BUILTINS.filter((b) => b.requires === undefined || installedPackageDir(b.requires, hostPackageRoot()) !== undefined)
/** And the ones it skips, for want of their package. */
const skippedBuiltins = BUILTINS.filter((b) => !loaded.includes(b))

const run = (args: ReadonlyArray<string>, cwd: string, env: Record<string, string> = {}) => runCli(["plugins", ...args], { cwd, env })

describe("pynchy plugins (real process)", () => {
  it("prints each plugin with its source and contributions, then what was skipped and why", async () => {
    const dir = tempProject()
    fs.writeFileSync(path.join(dir, "pynchy.yaml"), `plugins:\n  modules: [${JSON.stringify(EXAMPLE)}]\n`)
    const r = await run([], dir)
    assert.strictEqual(r.code, 0, r.stderr)
    assert.match(r.stdout, new RegExp(`^plugins: ${loaded.length + 1 + (claudeCodeInstalled ? 1 : 0)} loaded, ${(claudeCodeInstalled ? 0 : 1) + skippedBuiltins.length} skipped, 0 problem\\(s\\)$`, "m"))
    assert.match(r.stdout, /^core-skills {2}\(builtin\)$/m)
    assert.match(r.stdout, /^ {2}skillPaths {2}core$/m)
    assert.include(r.stdout, `hello 0.1.0  (module ${path.join(EXAMPLE, "plugin.js")})`)
    assert.match(r.stdout, /^ {2}serviceHandler {2}hello\.greet$/m)
    for (const b of skippedBuiltins) assert.include(r.stdout, `  ${b.name}  (builtin): optional package '${b.requires}' is not installed; to enable: npm install ${b.requires}\n`)
  })

  it("--json prints the same as JSON", async () => {
    const r = await run(["--json"], tempProject(), { PYNCHY_PLUGINS: EXAMPLE })
    assert.strictEqual(r.code, 0, r.stderr)
    const report = JSON.parse(r.stdout)
    const builtins = loaded.map((b) => b.name)
    assert.deepStrictEqual(report.plugins.map((p: { name: string; from: string }) => p.name), [...builtins, ...(claudeCodeInstalled ? ["claude-code"] : []), "hello"])
    const hello = report.plugins.at(-1)
    assert.deepStrictEqual(hello.contributions, { serviceHandler: ["hello.greet"], skillPaths: ["hello"] })
    assert.strictEqual(hello.source._tag, "module")
    assert.deepStrictEqual(report.skipped.filter((p: { name: string }) => p.name !== "claude-code"), skippedBuiltins.map((b) => ({ name: b.name, from: "builtin", reason: `optional package '${b.requires}' is not installed`, hint: `npm install ${b.requires}` })))
    if (!claudeCodeInstalled) assert.strictEqual(report.skipped.find((p: { name: string }) => p.name === "claude-code")?.hint, installCommand(claudeCode))
    assert.deepStrictEqual(report.faults, [])
  })

  it("lists every problem and exits 1 when startup would fail", async () => {
    const dir = tempProject()
    const broken = path.join(writePackage(dir, "broken", {}, { "p.js": pluginModule("broken", "observer: () => [{ name: 'o' }, { onEvent() {} }]") }), "p.js")
    const r = await run([], dir, { PYNCHY_PLUGINS: `${broken},./missing.js` })
    assert.strictEqual(r.code, 1)
    assert.match(r.stdout, /^problems \(startup would fail\):$/m)
    assert.match(r.stdout, /^ {2}broken {2}observer {2}invalid_contribution: item 0 'o': onEvent: is missing$/m)
    assert.match(r.stdout, /^ {2}broken {2}observer {2}invalid_contribution: item 1: name: is missing$/m)
    assert.match(r.stdout, /^ {2}\.\/missing\.js {2}load {2}load_failed: .*missing\.js does not exist$/m)
  })
})
