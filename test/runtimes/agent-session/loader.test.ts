import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, HashMap, Layer, Logger } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { AgentSessionRuntimeRegistry } from "../../../src/runtimes/agent-session/AgentSessionRuntimeRegistry.js"
import { layerFromEnv, loadAgentSessionRuntimes, parseSpecifiers } from "../../../src/runtimes/agent-session/loader.js"
import { tempDir } from "../../support/db.js"

const runtime = (id: string) => `{ id: ${JSON.stringify(id)}, provider: "test", inspect: () => ({ state: "idle" }) }`

/** A folder of modules, one per way of loading (or failing to). */
const fixtures = () => {
  const dir = tempDir("pynchy-modules-")
  const write = (name: string, text: string) => fs.writeFileSync(path.join(dir, name), text)
  write("named.mjs", `export function registerAgentSessionRuntimes(registry) { registry.register(${runtime("named")}) }`)
  write("default.mjs", `export default (registry) => { registry.register(${runtime("by-default")}) }`)
  write("async.mjs", `export default async (registry) => { await null; registry.register(${runtime("async")}) }`)
  write("nothing.mjs", `export const something = 1`)
  write("broken.mjs", `throw new Error("cannot start")`)
  write("throws.mjs", `export default (registry) => { registry.register(${runtime("partial")}); throw new Error("half way") }`)
  write("duplicate.mjs", `export default (registry) => { registry.register(${runtime("named")}) }`)
  return dir
}

describe("loadAgentSessionRuntimes", () => {
  it.effect("splits on commas and newlines and drops blanks", () =>
    Effect.sync(() => assert.deepStrictEqual(parseSpecifiers(" a.mjs, b \n\n c,\r\n"), ["a.mjs", "b", "c"])))

  it.effect("loads absolute, ./relative and cwd-relative paths; logs and skips every kind of failure; never fails", () =>
    Effect.gen(function* () {
      const dir = fixtures()
      const registry = yield* AgentSessionRuntimeRegistry
      const report = yield* loadAgentSessionRuntimes(
        [
          path.join(dir, "named.mjs"),
          "./default.mjs",
          "async.mjs",
          "nothing.mjs",
          "broken.mjs",
          "throws.mjs",
          "duplicate.mjs",
          "./missing.mjs",
          "no-such-package-pynchy-test"
        ],
        dir
      )
      assert.deepStrictEqual(report.loaded.map((l) => [path.basename(l.specifier), l.registered]), [
        ["named.mjs", ["named"]],
        ["default.mjs", ["by-default"]],
        ["async.mjs", ["async"]],
        // A second registration of an id replaces the first (ClawConnect's rule): not a new id, not a failure.
        ["duplicate.mjs", []]
      ])
      assert.deepStrictEqual(report.skipped.map((s) => [s.specifier, s.code]), [
        ["nothing.mjs", "no_registrar"],
        ["broken.mjs", "import_failed"],
        ["throws.mjs", "registrar_failed"],
        ["./missing.mjs", "module_not_found"],
        ["no-such-package-pynchy-test", "module_not_found"]
      ])

      // What a throwing registrar registered before it threw stays.
      assert.deepStrictEqual((yield* registry.runtimes).map((r) => r.id), ["named", "by-default", "async", "partial"])
    }).pipe(Effect.provide(AgentSessionRuntimeRegistry.layer)))

  it.effect("every skipped module is logged with its specifier and reason code", () => {
    const lines: Array<{ message: string; specifier: unknown; code: unknown }> = []
    const capture = Logger.replace(Logger.defaultLogger, Logger.make(({ message, annotations }) => {
      const text = Array.isArray(message) ? message.join(" ") : String(message)
      lines.push({ message: text, specifier: HashMap.unsafeGet(annotations, "specifier"), code: HashMap.get(annotations, "code").pipe((o) => o._tag === "Some" ? o.value : undefined) })
    }))
    const dir = fixtures()
    return Effect.gen(function* () {
      yield* loadAgentSessionRuntimes(["broken.mjs", "nothing.mjs"], dir)
      const skipped = lines.filter((l) => l.message.includes("skipped"))
      assert.deepStrictEqual(skipped.map((l) => [l.specifier, l.code]), [["broken.mjs", "import_failed"], ["nothing.mjs", "no_registrar"]])
    }).pipe(Effect.provide(Layer.merge(AgentSessionRuntimeRegistry.layer, capture)))
  })

  it.effect("resolves a bare package name from this package", () =>
    Effect.gen(function* () {
      // `yaml` is a dependency without a registrar: resolved and imported, then skipped for that reason.
      const report = yield* loadAgentSessionRuntimes(["yaml"], tempDir())
      assert.deepStrictEqual(report.skipped.map((s) => s.code), ["no_registrar"])
    }).pipe(Effect.provide(AgentSessionRuntimeRegistry.layer)))

  const withEnv = (entries: Record<string, string>) =>
    layerFromEnv.pipe(Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(entries))))))

  it.effect("PYNCHY_AGENT_SESSION_RUNTIME_MODULES fills the registry (newline separated)", () => {
    const dir = fixtures()
    return Effect.gen(function* () {
      const registry = yield* AgentSessionRuntimeRegistry
      assert.deepStrictEqual((yield* registry.runtimes).map((r) => r.id), ["named", "by-default"])
    }).pipe(Effect.provide(withEnv({ PYNCHY_AGENT_SESSION_RUNTIME_MODULES: `${path.join(dir, "named.mjs")}\n${path.join(dir, "default.mjs")}` })))
  })

  it.effect("CLAWCONNECT_AGENT_SESSION_RUNTIME_MODULES is accepted as an alias", () => {
    const dir = fixtures()
    return Effect.gen(function* () {
      const registry = yield* AgentSessionRuntimeRegistry
      assert.deepStrictEqual((yield* registry.runtimes).map((r) => r.id), ["named"])
    }).pipe(Effect.provide(withEnv({ CLAWCONNECT_AGENT_SESSION_RUNTIME_MODULES: path.join(dir, "named.mjs") })))
  })

  it.effect("unset: an empty registry", () =>
    Effect.gen(function* () {
      const registry = yield* AgentSessionRuntimeRegistry
      assert.deepStrictEqual(yield* registry.runtimes, [])
    }).pipe(Effect.provide(withEnv({}))))
})
