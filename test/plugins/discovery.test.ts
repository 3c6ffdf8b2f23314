import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, HashMap, Layer, Logger } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { HostConfig } from "../../src/config/HostConfig.js"
import { PluginsConfig } from "../../src/config/schema.js"
import { BUILTINS, type BuiltinPlugin } from "../../src/builtins/list.js"
import { PluginRegistry } from "../../src/plugins/PluginRegistry.js"
import { hostPackageRoot, installedPackageDir } from "../../src/plugins/paths.js"
import { EXAMPLE, hostConfig, inspectAt, pluginModule, tempProject, withEnv, writePackage } from "./support.js"

const channel = (name: string) => `createChannel: () => ({ name: ${JSON.stringify(name)}, idempotentResends: true, send: async () => {} })`

/** The built-ins that need no optional package. */
const ALWAYS_ON = BUILTINS.filter((b) => b.requires === undefined).map((b) => b.name)

describe("discovery", () => {
  it.effect("built-ins: core-skills loads; slack is skipped because @slack/bolt is not installed, and never imported", () =>
    Effect.gen(function* () {
      const root = tempProject()
      let slackLoads = 0
      const slack: BuiltinPlugin = { ...BUILTINS.find((b) => b.name === "slack")!, load: () => { slackLoads++; return Promise.resolve({}) } }
      const { faults, registry } = yield* inspectAt(root, { builtins: [BUILTINS.find((b) => b.name === "core-skills")!, slack] })
      assert.deepStrictEqual(faults, [])
      assert.deepStrictEqual(registry.plugins.map((p) => p.name), ["core-skills"])
      assert.deepStrictEqual(registry.skills.map((s) => s.name), ["core"])
      assert.strictEqual(slackLoads, 0)
      assert.strictEqual(registry.skipped.length, 1)
      assert.strictEqual(registry.skipped[0]?.name, "slack")
      assert.include(registry.skipped[0]!.reason, "@slack/bolt")
      assert.strictEqual(registry.skipped[0]?.hint, "npm install @slack/bolt")
    }))

  it.effect("the default built-ins at the host package: core-skills in, slack in exactly when @slack/bolt is installed", () =>
    Effect.gen(function* () {
      assert.isTrue(fs.existsSync(path.join(hostPackageRoot(), "package.json")))
      const { faults, registry } = yield* PluginRegistry.inspect({ builtins: BUILTINS }).pipe(withEnv(), Effect.provide(hostConfig()))
      assert.deepStrictEqual(faults, [])
      assert.include(registry.plugins.map((p) => p.name), "core-skills")
      const boltInstalled = installedPackageDir("@slack/bolt", hostPackageRoot()) !== undefined
      assert.strictEqual(registry.plugins.some((p) => p.name === "slack"), boltInstalled)
      assert.strictEqual(registry.skipped.some((s) => s.name === "slack"), !boltInstalled)
    }))

  it.effect("an installed optional package enables its built-in", () =>
    Effect.gen(function* () {
      const root = tempProject()
      writePackage(root, "@slack/bolt", { main: "index.js" }, { "index.js": "export {}\n" })
      writePackage(root, "grammy", { main: "index.js" }, { "index.js": "export {}\n" })
      writePackage(root, "discord.js", { main: "index.js" }, { "index.js": "export {}\n" })
      const { faults, registry } = yield* inspectAt(root, { builtins: BUILTINS })
      assert.deepStrictEqual(faults, [])
      assert.deepStrictEqual(registry.plugins.map((p) => p.name), BUILTINS.map((b) => b.name))
      assert.deepStrictEqual(registry.skipped, [])
    }))

  it.effect("finds plain and scoped packages with a pynchy field (sorted), and ignores the rest", () =>
    Effect.gen(function* () {
      const root = tempProject()
      writePackage(root, "zeta-plugin", { pynchy: { plugin: "./dist/p.js" } }, { "dist/p.js": pluginModule("zeta", channel("z")) })
      writePackage(root, "@acme/pynchy-alpha", { pynchy: { plugin: "./p.js" } }, { "p.js": pluginModule("alpha", channel("a")) })
      writePackage(root, "left-pad", { main: "index.js" }, { "index.js": "throw new Error('must not be imported')\n" })
      fs.mkdirSync(path.join(root, "node_modules", ".bin"), { recursive: true })
      const { faults, registry } = yield* inspectAt(root)
      assert.deepStrictEqual(faults, [])
      assert.deepStrictEqual(registry.plugins.map((p) => [p.name, p.source._tag === "package" ? `${p.source.name}@${p.source.version}` : ""]), [
        ["alpha", "@acme/pynchy-alpha@1.2.3"],
        ["zeta", "zeta-plugin@1.2.3"]
      ])
      assert.deepStrictEqual(registry.channels.map((t) => `${t.plugin}:${t.name}`), ["alpha:a", "zeta:z"])
    }))

  it.effect("explicit modules: config paths relative to the config file, PYNCHY_PLUGINS (comma/newline), package names", () =>
    Effect.gen(function* () {
      const root = tempProject()
      const configDir = path.join(root, "conf")
      fs.mkdirSync(path.join(configDir, "plugins"), { recursive: true })
      fs.writeFileSync(path.join(configDir, "plugins", "one.js"), pluginModule("one", channel("t1")))
      fs.writeFileSync(path.join(configDir, "pynchy.yaml"), "plugins:\n  modules: [./plugins/one.js]\n")
      const two = path.join(root, "two.mjs")
      fs.writeFileSync(two, `export const plugin = { name: "two" }\n`)
      writePackage(root, "not-a-pynchy-field", { main: "main.js" }, { "main.js": pluginModule("three") })
      const { faults, registry } = yield* PluginRegistry.inspect({ root, builtins: [] }).pipe(
        Effect.provide(HostConfig.layer),
        withEnv({ PYNCHY_CONFIG: path.join(configDir, "pynchy.yaml"), PYNCHY_PLUGINS: `${two},\n not-a-pynchy-field ,${EXAMPLE}` })
      )
      assert.deepStrictEqual(faults, [])
      assert.deepStrictEqual(registry.plugins.map((p) => [p.name, p.source._tag]), [
        ["one", "module"],
        ["two", "module"],
        ["three", "module"],
        ["hello", "module"]
      ])
    }))

  it.effect("plugins.disabled skips built-ins, packages (by package or plugin name) and modules, with the reason", () =>
    Effect.gen(function* () {
      const root = tempProject()
      writePackage(root, "pkg-a", { pynchy: { plugin: "./p.js" } }, { "p.js": pluginModule("a") })
      writePackage(root, "pkg-b", { pynchy: { plugin: "./p.js" } }, { "p.js": pluginModule("b") })
      writePackage(root, "pkg-c", { pynchy: { plugin: "./p.js" } }, { "p.js": pluginModule("c") })
      const { faults, registry } = yield* inspectAt(root, {
        builtins: BUILTINS,
        config: { plugins: PluginsConfig.make({ disabled: [...ALWAYS_ON, "pkg-a", "b"] }) }
      })
      assert.deepStrictEqual(faults, [])
      assert.deepStrictEqual(registry.plugins.map((p) => p.name), ["c"])
      assert.deepStrictEqual(registry.skipped.map((s) => s.name).sort(), [...ALWAYS_ON, "b", "discord", "pkg-a", "slack", "telegram"].sort())
      assert.include(registry.skipped.find((s) => s.name === "pkg-a")!.reason, "plugins.disabled")
    }))

  it.effect("a module that fails to import, a bad pynchy field, a missing entry and an unknown package are faults", () =>
    Effect.gen(function* () {
      const root = tempProject()
      writePackage(root, "throws-on-import", { pynchy: { plugin: "./p.js" } }, { "p.js": "throw new Error('no config for me')\n" })
      writePackage(root, "bad-field", { pynchy: "./p.js" })
      writePackage(root, "no-entry", { pynchy: { plugin: "./dist/missing.js" } })
      writePackage(root, "no-export", { pynchy: { plugin: "./p.js" } }, { "p.js": "export const x = 1\n" })
      const { faults } = yield* inspectAt(root, { env: { PYNCHY_PLUGINS: "ghost-package" } })
      assert.deepStrictEqual(faults.map((f) => [f.plugin, f.hook, f.code]).sort(), [
        ["bad-field", "load", "invalid_plugin"],
        ["ghost-package", "load", "load_failed"],
        ["no-entry", "load", "load_failed"],
        ["no-export", "plugin", "invalid_plugin"],
        ["throws-on-import", "load", "load_failed"]
      ])
      assert.include(faults.find((f) => f.plugin === "throws-on-import")!.problem, "no config for me")
      assert.include(faults.find((f) => f.plugin === "ghost-package")!.problem, "npm install ghost-package")
    }))

  it.effect("a package also named explicitly is loaded once", () =>
    Effect.gen(function* () {
      const root = tempProject()
      writePackage(root, "twice", { pynchy: { plugin: "./p.js" } }, { "p.js": pluginModule("twice") })
      const { faults, registry } = yield* inspectAt(root, { env: { PYNCHY_PLUGINS: "twice" } })
      assert.deepStrictEqual(faults, [])
      assert.deepStrictEqual(registry.plugins.map((p) => [p.name, p.source._tag]), [["twice", "package"]])
    }))

  it.effect("PluginRegistry.layerWith fails startup with the typed error; a valid set provides the service", () =>
    Effect.gen(function* () {
      const root = tempProject()
      writePackage(root, "broken", { pynchy: { plugin: "./p.js" } }, { "p.js": pluginModule("broken", "observer: () => ({ name: 'o' })") })
      const exit = yield* PluginRegistry.pipe(
        Effect.provide(PluginRegistry.layerWith({ root, builtins: [] }).pipe(Layer.provide(hostConfig()))),
        withEnv(),
        Effect.exit
      )
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isFailure(exit) && exit.cause._tag === "Fail") {
        assert.strictEqual(exit.cause.error._tag, "PluginContributionsInvalid")
      } else assert.fail("expected a PluginContributionsInvalid failure")

      const good = tempProject()
      const registry = yield* PluginRegistry.pipe(
        Effect.provide(PluginRegistry.layerWith({ root: good, builtins: BUILTINS }).pipe(Layer.provide(hostConfig()))),
        withEnv()
      )
      assert.include(registry.plugins.map((p) => p.name), "core-skills")
    }))

  it.effect("startup logs each skipped plugin with its reason and install hint", () =>
    Effect.gen(function* () {
      const lines: Array<string> = []
      const capture = Logger.make(({ annotations, message }) => {
        lines.push(`${String(message)} ${HashMap.toEntries(annotations).map(([k, v]) => `${k}=${String(v)}`).join(" ")}`)
      })
      yield* PluginRegistry.make({ root: tempProject(), builtins: BUILTINS }).pipe(
        Effect.provide(Layer.merge(hostConfig(), Logger.replace(Logger.defaultLogger, capture))),
        withEnv()
      )
      const skipped = lines.find((l) => l.startsWith("plugin skipped") && l.includes("plugin=slack"))
      assert.isDefined(skipped)
      assert.include(skipped, "plugin=slack")
      assert.include(skipped, "reason=optional package '@slack/bolt' is not installed")
      assert.include(skipped, "hint=npm install @slack/bolt")
    }))
})
