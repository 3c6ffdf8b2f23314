import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Fiber, Option, TestClock } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { ConnectionName } from "../../src/domain/ids.js"
import { PynchyConfig } from "../../src/config/schema.js"
import { definePlugin } from "../../src/contracts/plugin.js"
import type { PluginSource } from "../../src/plugins/errors.js"
import { buildRegistry, collect, contextFor } from "../../src/plugins/registry.js"
import { tempDir } from "../support/db.js"
import { skillFolder } from "./support.js"

const builtin: PluginSource = { _tag: "builtin" }
const noop = () => undefined
const faultsOf = (plugins: ReadonlyArray<unknown>) =>
  collect(plugins.map((plugin) => ({ plugin, source: builtin }))).pipe(Effect.map((r) => r.faults))

describe("buildRegistry", () => {
  it.effect("accepts one valid contribution of every supported hook, each carrying its plugin and source", () =>
    Effect.gen(function* () {
      const skills = tempDir()
      const skill = skillFolder(skills, "folder-name", "name: greeting\ndescription: greets\ntier: community")
      const everything = definePlugin({
        name: "everything",
        version: "1.0.0",
        agentCore: () => ({ name: "scripted", builtin: true }),
        serviceHandler: async () => ({ name: "x.do", description: "does", inputSchema: { type: "object" }, risk: "medium", handler: noop }),
        actionSpecs: () => [{ id: "x.do", surfaces: ["chat"], evidence: ["approval"] }],
        skillPaths: () => [skill],
        createChannel: () => ({ name: "tty", idempotentResends: false, send: async () => {} }),
        connectionRuntime: () => [{ name: "rt", start: async () => {}, close: async () => {}, isReady: () => true }],
        containerRuntime: () => Effect.succeed({ name: "bwrap", start: noop, kill: noop, isAlive: noop }),
        observer: () => ({ name: "sqlite", onEvent: noop })
      })
      const registry = yield* buildRegistry([{ plugin: everything, source: builtin }])
      assert.deepStrictEqual(registry.plugins[0]?.contributions, {
        agentCore: ["scripted"],
        serviceHandler: ["x.do"],
        actionSpecs: ["x.do"],
        skillPaths: ["greeting"],
        createChannel: ["tty"],
        connectionRuntime: ["rt"],
        containerRuntime: ["bwrap"],
        observer: ["sqlite"]
      })
      assert.strictEqual(registry.skills[0]?.value.path, skill)
      assert.strictEqual(registry.skills[0]?.value.tier, "community")
      const channel = Option.getOrThrow(registry.find("createChannel", "tty"))
      assert.strictEqual(channel.plugin, "everything")
      assert.deepStrictEqual(channel.source, builtin)
      assert.isTrue(Option.isNone(registry.find("createChannel", "nope")))
    }))

  it.effect("every hook has a consumer: valid speech synthesizers and plugin workspaces are accepted, a malformed contribution is still refused", () =>
    Effect.gen(function* () {
      const faults = yield* faultsOf([{
        name: "ahead",
        speechSynthesizer: () => ({ name: "festival", synthesize: noop }),
        workspaceSpec: () => ({ id: "daily", instructions: "summarise", schedule: "0 8 * * *" })
      }])
      assert.deepStrictEqual(faults, [])
      const [malformed] = yield* faultsOf([{ name: "p", tunnel: () => ({ name: "" , detect: noop }) }])
      assert.strictEqual(malformed?.code, "invalid_contribution")
    }))

  it.effect("an agent core is a module the sandbox can mount: every other form is refused at startup with the reason", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const ok = path.join(dir, "ok.mjs")
      const secret = path.join(dir, "secret.mjs")
      fs.writeFileSync(ok, "export default async () => {}\n", { mode: 0o644 })
      fs.writeFileSync(secret, "export default async () => {}\n", { mode: 0o600 })
      fs.chmodSync(secret, 0o600)
      fs.mkdirSync(path.join(dir, "sub.js"))
      const faults = yield* faultsOf([{
        name: "cores",
        agentCore: () => [
          { name: "fine", module: ok },
          { name: "host-side", run: noop },
          { name: "missing", module: path.join(dir, "gone.mjs") },
          { name: "relative", module: "./core.mjs" },
          { name: "folder", module: `${dir}/sub.js` },
          { name: "private", module: secret },
          { name: "text", module: path.join(dir, "core.txt") },
          { name: "fake-builtin", builtin: true }
        ]
      }])
      assert.deepStrictEqual(faults.map((f) => f.code), Array(7).fill("invalid_contribution"))
      const problems = faults.map((f) => f.problem)
      assert.include(problems[0], "item 1 'host-side': run: a core runs inside the sandbox, not on the host: give `module`")
      assert.include(problems[1], "gone.mjs does not exist")
      assert.include(problems[2], "module: must be an absolute path")
      assert.include(problems[3], "sub.js is not a regular file")
      assert.include(problems[4], "is not readable by others (the sandbox runs as its own user)")
      assert.include(problems[5], "is not an ES module file")
      assert.include(problems[6], "the runner carries no built-in core named 'fake-builtin'")
    }))

  it.effect("keeps the author's object, so methods keep `this`", () =>
    Effect.gen(function* () {
      class Counter {
        readonly name = "counter"
        private ready = true
        isReady() {
          return this.ready
        }
        async start() {}
        async close() {
          this.ready = false
        }
      }
      const runtime = new Counter()
      const registry = yield* buildRegistry([{ plugin: { name: "p", connectionRuntime: () => [runtime] }, source: builtin }])
      assert.strictEqual(registry.connectionRuntimes[0]?.value, runtime)
      assert.isTrue((registry.connectionRuntimes[0]?.value as Counter).isReady())
    }))

  it.effect("hooks receive the decoded config and connection settings", () =>
    Effect.gen(function* () {
      const config = PynchyConfig.make({ connections: { [ConnectionName.make("work")]: { kind: "demo", team: "t1" } } })
      const plugin = definePlugin({
        name: "demo",
        createChannel: ({ config, connectionConfig }) =>
          Object.keys(config.connections).map((name) => ({ name: `${name}-${String(connectionConfig(name)?.team)}`, idempotentResends: true, send: async () => {} }))
      })
      const registry = yield* buildRegistry([{ plugin, source: builtin }], { context: contextFor(config) })
      assert.deepStrictEqual(registry.channels.map((c) => c.name), ["work-t1"])
    }))

  it.effect("reports a throw, a rejection and an Effect failure as hook_failed", () =>
    Effect.gen(function* () {
      const faults = yield* faultsOf([
        { name: "a", tunnel: () => { throw new Error("sync boom") } },
        { name: "b", tunnel: () => Promise.reject(new TypeError("async boom")) },
        { name: "c", tunnel: () => Effect.die("effect boom") }
      ])
      assert.deepStrictEqual(faults.map((f) => [f.plugin, f.hook, f.code]), [["a", "tunnel", "hook_failed"], ["b", "tunnel", "hook_failed"], ["c", "tunnel", "hook_failed"]])
      assert.include(faults[0]!.problem, "sync boom")
      assert.include(faults[1]!.problem, "TypeError: async boom")
    }))

  it.effect("a hook that never settles becomes hook_timeout at its deadline", () =>
    Effect.gen(function* () {
      const fiber = yield* Effect.fork(
        Effect.either(buildRegistry([{ plugin: { name: "slow", tunnel: () => new Promise(() => {}) }, source: builtin }], { hookTimeout: "5 seconds" }))
      )
      yield* TestClock.adjust("4 seconds")
      assert.isTrue(Option.isNone(yield* Fiber.poll(fiber)))
      yield* TestClock.adjust("1 second")
      const result = yield* Fiber.join(fiber)
      assert.isTrue(Either.isLeft(result))
      if (Either.isLeft(result)) {
        assert.deepStrictEqual(result.left.faults.map((f) => [f.plugin, f.hook, f.code]), [["slow", "tunnel", "hook_timeout"]])
        assert.include(result.left.faults[0]!.problem, "5s")
      }
    }))

  it.effect("reports every problem of a malformed contribution, naming the item, without its values", () =>
    Effect.gen(function* () {
      const faults = yield* faultsOf([
        { name: "p", mcpServerSpec: () => [{ name: "ok", command: "node", where: "host" }, { name: "leaky", command: "node", where: "cloud", env: ["OK", 12345], args: "sk-secret" }] }
      ])
      assert.deepStrictEqual(faults.map((f) => f.code), ["invalid_contribution"])
      const fault = faults[0]
      assert.include(fault!.problem, "item 1 'leaky'")
      assert.include(fault!.problem, "env.1: Expected string, got number")
      assert.include(fault!.problem, "where:")
      assert.include(fault!.problem, "args:")
      assert.notInclude(fault!.problem, "12345")
      assert.notInclude(fault!.problem, "sk-secret")
    }))

  it.effect("checks the plugin object: name, hook functions, unknown keys (the typo case)", () =>
    Effect.gen(function* () {
      const faults = yield* faultsOf([
        "not an object",
        { version: "1" },
        { name: "typo", skillPath: () => [], tunnel: "not a function", observer: () => ({ name: "o", onEvent: noop }) }
      ])
      assert.deepStrictEqual(faults.map((f) => [f.plugin, f.hook, f.code]), [
        ["(builtin)", "plugin", "invalid_plugin"],
        ["(builtin)", "plugin", "invalid_plugin"],
        ["typo", "plugin", "invalid_plugin"],
        ["typo", "tunnel", "invalid_plugin"]
      ])
      assert.include(faults[2]!.problem, "unknown key 'skillPath'")
    }))

  it.effect("duplicate names: per category, across and within plugins; connection runtimes across all plugins", () =>
    Effect.gen(function* () {
      const rt = (name: string) => ({ name, start: noop, close: noop, isReady: noop })
      const faults = yield* faultsOf([
        { name: "a", connectionRuntime: () => [rt("matrix"), rt("solo")], createChannel: () => ({ name: "matrix", idempotentResends: true, send: noop }) },
        { name: "b", connectionRuntime: () => rt("matrix") },
        { name: "c", observer: () => [{ name: "twice", onEvent: noop }, { name: "twice", onEvent: noop }] }
      ])
      assert.deepStrictEqual(faults.map((f) => [f.plugin, f.hook, f.code]), [
        ["a", "connectionRuntime", "duplicate_name"],
        ["b", "connectionRuntime", "duplicate_name"],
        ["c", "observer", "duplicate_name"],
        ["c", "observer", "duplicate_name"]
      ])
      assert.include(faults[0]!.problem, "connection runtime name 'matrix' (also from plugin 'b')")
      assert.include(faults[2]!.problem, "also from this plugin")
    }))

  it.effect("two plugins with one name are both reported", () =>
    Effect.gen(function* () {
      const faults = yield* collect([
        { plugin: { name: "same" }, source: builtin },
        { plugin: { name: "same" }, source: { _tag: "module", specifier: "./x.js", path: "/p/x.js" } }
      ]).pipe(Effect.map((r) => r.faults))
      assert.deepStrictEqual(faults.map((f) => f.code), ["duplicate_plugin", "duplicate_plugin"])
      assert.include(faults[0]!.problem, "module /p/x.js")
    }))

  it.effect("a skill folder needs SKILL.md and an absolute path; frontmatter must be YAML", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const broken = skillFolder(dir, "broken", "name: [unclosed")
      const faults = yield* faultsOf([{ name: "s", skillPaths: () => ["relative/skill", path.join(dir, "empty"), broken] }])
      assert.deepStrictEqual(faults.map((f) => f.code), ["invalid_contribution", "invalid_contribution", "invalid_contribution"])
      assert.include(faults[0]!.problem, "absolute")
      assert.include(faults[1]!.problem, "no readable SKILL.md")
      assert.include(faults[2]!.problem, "not valid YAML")
    }))

  it.effect("the typed error lists every fault in its message", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(buildRegistry([
        { plugin: { name: "a", tunnel: () => ({ name: "t" }) }, source: builtin },
        { plugin: { name: "b", observer: () => { throw new Error("x") } }, source: builtin }
      ]))
      assert.strictEqual(error._tag, "PluginContributionsInvalid")
      assert.match(error.message, /2 plugin problem/)
      assert.include(error.message, "plugin 'a', tunnel: invalid_contribution")
      assert.include(error.message, "plugin 'b', observer: hook_failed")
    }))
})
