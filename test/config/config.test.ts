import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Either, Exit, Layer, Option } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { decodeConfig, HostConfig, readConfigFile } from "../../src/config/HostConfig.js"
import { tempDir } from "../support/db.js"

const withEnv = (env: Record<string, string>) => Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))

describe("config", () => {
  it("an empty document is a working host (embedded defaults)", () => {
    const config = Either.getOrThrow(decodeConfig(null, "x.yaml"))
    assert.strictEqual(config.workspaces[0]!.id, "main")
    assert.strictEqual(config.limits.maxConcurrentTurns, 4)
    assert.strictEqual(config.containerRuntime, "auto")
  })

  it("lists every problem at once, each with its path", () => {
    const result = decodeConfig({
      dataDir: "",
      workspaces: [{ id: "Bad Id" }, { id: "ok", sandbox: { memoryMb: 1 } }],
      routes: [{ connection: "terminal", place: "*", workspace: "nowhere" }],
      limits: { maxConcurrentTurns: 0 },
      typo: true
    }, "x.yaml")
    assert.isTrue(Either.isLeft(result))
    const paths = Either.isLeft(result) ? result.left.problems.map((p) => p.path) : []
    for (const expected of ["dataDir", "workspaces.0.id", "workspaces.1.sandbox.memoryMb", "limits.maxConcurrentTurns", "typo"]) {
      assert.include(paths, expected)
    }
  })

  it("cross-field rules: duplicates (a route's workspace may come from a plugin: test/plugins/workspaces.test.ts checks those)", () => {
    const result = decodeConfig({
      workspaces: [{ id: "a" }, { id: "a" }],
      routes: [{ connection: "t", place: "x", workspace: "b" }, { connection: "t", place: "x", workspace: "a" }]
    }, "x.yaml")
    const problems = Either.isLeft(result) ? result.left.problems : []
    assert.deepStrictEqual(problems.map((p) => p.path), ["workspaces.1.id", "routes.1"])
  })

  it.effect("YAML syntax errors name the line", () =>
    Effect.gen(function* () {
      const file = path.join(tempDir(), "pynchy.yaml")
      fs.writeFileSync(file, "workspaces:\n  - id: a\n   bad: [\n")
      const exit = yield* Effect.exit(readConfigFile(file))
      assert.isTrue(Exit.isFailure(exit))
      const message = Exit.isFailure(exit) ? String(exit.cause) : ""
      assert.match(message, /line \d+:\d+/)
    }))

  it.effect("env overrides win over the file; a missing file means defaults", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const file = path.join(dir, "pynchy.yaml")
      fs.writeFileSync(file, "dataDir: ./state\nlimits:\n  maxConcurrentTurns: 2\n")
      const fromFile = yield* HostConfig.load.pipe(withEnv({ PYNCHY_CONFIG: file }))
      assert.strictEqual(fromFile.dataDir, path.join(dir, "state"))
      assert.strictEqual(fromFile.config.limits.maxConcurrentTurns, 2)
      const overridden = yield* HostConfig.load.pipe(withEnv({ PYNCHY_CONFIG: file, PYNCHY_MAX_CONCURRENT_TURNS: "7", PYNCHY_DATA_DIR: "/tmp/elsewhere" }))
      assert.strictEqual(overridden.config.limits.maxConcurrentTurns, 7)
      assert.strictEqual(overridden.dataDir, "/tmp/elsewhere")
      const missing = yield* Effect.exit(HostConfig.load.pipe(withEnv({ PYNCHY_CONFIG: path.join(dir, "nope.yaml") })))
      assert.isTrue(Exit.isFailure(missing))
      const layer = yield* Effect.scoped(Layer.build(HostConfig.layer)).pipe(withEnv({}))
      assert.isTrue(Option.isSome(Option.some(layer)))
    }))
})
