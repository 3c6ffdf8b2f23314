/**
 * `config check` names every problem of a config in one run (the file's schema, its cross-field
 * rules and what start checks later), suggests the near key for a typo, reads hostile YAML
 * (an alias to nothing, an alias bomb) into one line each, and warns about keys too short to mask.
 */
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Logger, LogLevel } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { checkConfig } from "../../src/host/preflight.js"
import { editDistance, nearest } from "../../src/domain/near.js"
import { tempDir } from "../support/db.js"

const check = (yaml: string, vars: Record<string, string> = {}) => {
  const dir = tempDir("pynchy-check-all-")
  const file = path.join(dir, "pynchy.yaml")
  fs.writeFileSync(file, yaml)
  const env = ConfigProvider.fromMap(new Map([["PYNCHY_CONFIG", file], ["PYNCHY_DATA_DIR", path.join(dir, "data")], ...Object.entries(vars)]))
  return checkConfig.pipe(Effect.withConfigProvider(env), Logger.withMinimumLogLevel(LogLevel.None))
}

const THREE = `
workspaces:
  - id: main
    modle: gpt-4o
    schedule: "every morning"
    scheduledPrompt: Plan my day.
    deliverTo: cli:daily
providers:
  - { name: openai, kind: openai, apiKeyEnv: PYNCHY_TEST_UNSET_OPENAI, models: [gpt-4o] }
connections:
  tg: { kind: telegram, tokenEnv: PYNCHY_TEST_UNSET_TELEGRAM }
routes:
  - { connection: tg, place: "*", workspace: main }
  - { connection: cli, place: "*", workspace: main }
  - { connection: mail, place: "*", workspace: main }
`

describe("config check", () => {
  it.effect("names an unknown key, a bad cron, an unset key variable, an unset channel token and an undeclared connection in one run", () =>
    Effect.gen(function* () {
      const { problems } = yield* check(THREE)
      const paths = problems.map((p) => p.path)
      assert.includeMembers(paths, ["workspaces.0.modle", "workspaces.0.schedule", "providers.0.apiKeyEnv", "connections.tg.tokenEnv", "routes.2.connection"])
      const typo = problems.find((p) => p.path === "workspaces.0.modle")!
      assert.strictEqual(typo.reason, "unknown key; did you mean 'model'?")
      assert.strictEqual(new Set(paths).size, paths.length, `each problem once: ${paths.join(", ")}`)
    }))

  it.effect("a key far from every known one gets the list instead of a guess", () =>
    Effect.gen(function* () {
      const { problems } = yield* check("zzzzzz: 1\n")
      assert.match(problems[0]!.reason, /unknown key \(found 1; expected one of dataDir/)
    }))

  it.effect("a problem of a value left out is not named twice by a later check", () =>
    Effect.gen(function* () {
      // A malformed variable name is refused by the schema; the gateway would say the key is missing.
      const { problems } = yield* check("providers:\n  - { name: p, kind: openai, apiKeyEnv: lower-case, models: [m] }\n")
      assert.deepStrictEqual(problems.map((p) => p.path), ["providers.0.apiKeyEnv"])
    }))

  it.effect("an alias to an anchor that is not set is one line with its position", () =>
    Effect.gen(function* () {
      const { problems } = yield* check("dataDir: .pynchy\nx: *nothere\n")
      assert.deepStrictEqual(problems.map((p) => `${p.path}: ${p.reason}`), ["line 2:4: alias *nothere names no anchor set before it (&nothere)"])
    }))

  it.effect("an alias bomb is refused in one line, without expanding it", () =>
    Effect.gen(function* () {
      const levels = ["a: &a [x, x, x, x, x, x, x, x, x]"]
      for (const [prev, next] of [["a", "b"], ["b", "c"], ["c", "d"], ["d", "e"], ["e", "f"], ["f", "g"]]) {
        levels.push(`${next}: &${next} [${Array(9).fill(`*${prev}`).join(", ")}]`)
      }
      const { problems } = yield* check(levels.join("\n") + "\n")
      assert.strictEqual(problems.length, 1)
      assert.match(problems[0]!.reason, /aliases expand to too many nodes/)
    }))

  it.effect("a provider key shorter than 8 characters is a warning, not a problem", () =>
    Effect.gen(function* () {
      const yaml = "providers:\n  - { name: local, kind: openai-compatible, baseUrl: 'http://127.0.0.1:9/v1', apiKeyEnv: PYNCHY_TEST_SHORT_KEY, models: [tiny] }\n"
      const short = yield* check(yaml, { PYNCHY_TEST_SHORT_KEY: "k" })
      assert.deepStrictEqual(short.problems, [])
      assert.deepStrictEqual(short.warnings.map((w) => w.path), ["providers.0.apiKeyEnv"])
      const long = yield* check(yaml, { PYNCHY_TEST_SHORT_KEY: "sk-long-enough" })
      assert.deepStrictEqual(long.warnings, [])
    }))
})

describe("nearest", () => {
  it("finds the key a typo meant, and none when two are as near or none is", () => {
    assert.strictEqual(nearest("modle", ["id", "model", "memory"]), "model")
    assert.strictEqual(nearest("worksapces", ["workspaces", "routes"]), "workspaces")
    assert.strictEqual(nearest("Model", ["model"]), "model")
    assert.isUndefined(nearest("zzzzzz", ["model", "routes"]))
    assert.isUndefined(nearest("ab", ["ac", "ad"]))
    assert.strictEqual(editDistance("ca", "ac"), 1)
    assert.strictEqual(editDistance("", "abc"), 3)
  })
})
