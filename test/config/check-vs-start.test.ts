/**
 * `config check` tells the truth: every config that makes the real start path fail (the default
 * host's layers, built until they fail) makes the check fail too, naming the same paths. The
 * configs are combinations of known-bad fragments (a property over subsets of them), each of a
 * kind that once passed the check and then failed `start`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, ConfigProvider, Effect, Exit, FastCheck as fc, Layer, Logger, LogLevel, Option } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { stringify } from "yaml"
import { makeHostLive } from "../../layers/default.js"
import { checkConfig, startProblems } from "../../src/host/preflight.js"
import { tempDir } from "../support/db.js"

interface Draft {
  providers: Array<Record<string, unknown>>
  connections: Record<string, Record<string, unknown>>
  routes: Array<Record<string, unknown>>
  workspaces: Array<Record<string, unknown>>
  gateway: { modelGroups: Array<Record<string, unknown>> }
  limits: Record<string, unknown>
  ui?: Record<string, unknown>
}

/**
 * Each fragment adds one mistake; `expect` is the path the check must name for it. `stage`: 0 the
 * file's schema, 1 its cross-field rules, 2 (default) what plugins, the gateway and the
 * connections' secrets check. The check names every mistake of every stage in one run: a value
 * the schema refuses is left out and the later stages run on the rest. Only a mistake that cannot
 * be left out (`blocks`: a bad list item, whose removal would renumber the list) stops it after
 * stage 0, with that stage's mistakes all named.
 */
const FRAGMENTS: ReadonlyArray<{ readonly name: string; readonly expect: RegExp; readonly stage?: 0 | 1; readonly blocks?: true; readonly add: (d: Draft) => void }> = [
  {
    name: "an apiKeyEnv that is not set",
    expect: /^providers\.\d+\.apiKeyEnv$/,
    add: (d) => void d.providers.push({ name: "unset", kind: "openai", apiKeyEnv: "PYNCHY_TEST_UNSET_KEY", models: ["m-unset"] })
  },
  {
    name: "an HTTP token in plain text instead of its digest",
    expect: /^connections\.api\.tokens\.0$/,
    add: (d) => {
      d.connections.api = { kind: "http", port: 0, tokens: ["a-plain-token"] }
      d.routes.push({ connection: "api", place: "*", workspace: "main" })
    }
  },
  {
    name: "an apiKeyFile that does not exist",
    expect: /^providers\.\d+\.apiKeyFile$/,
    add: (d) => void d.providers.push({ name: "filed", kind: "anthropic", apiKeyFile: "/nonexistent/pynchy-key", models: ["m-file"] })
  },
  {
    name: "a model group naming an unknown provider",
    expect: /^gateway\.modelGroups\.\d+\.deployments\.0\.provider$/,
    add: (d) => void d.gateway.modelGroups.push({ name: "ghost", deployments: [{ provider: "nobody", model: "x" }] })
  },
  {
    name: "a fallback to an unknown group",
    expect: /^gateway\.modelGroups\.\d+\.fallbacks\.0$/,
    add: (d) => {
      d.providers.push({ name: "local", kind: "openai-compatible", baseUrl: "http://127.0.0.1:9/v1", models: ["tiny"] })
      d.gateway.modelGroups.push({ name: "fb", deployments: [{ provider: "local", model: "tiny" }], fallbacks: ["missing"] })
    }
  },
  {
    name: "the README's old `deployments: [...]` placeholder",
    expect: /^gateway\.modelGroups\.\d+\.deployments\.0$/,
    stage: 0,
    blocks: true,
    add: (d) => void d.gateway.modelGroups.push({ name: "smart", deployments: ["..."] })
  },
  {
    name: "a routed connection no plugin serves",
    expect: /^routes\.\d+\.connection$/,
    add: (d) => {
      d.connections.pager = { kind: "pager" }
      d.routes.push({ connection: "pager", place: "*", workspace: "main" })
    }
  },
  {
    name: "a route to an unknown workspace",
    expect: /^routes\.\d+\.workspace$/,
    stage: 1,
    add: (d) => void d.routes.push({ connection: "cli", place: "lost", workspace: "nowhere" })
  },
  {
    name: "a limit out of range",
    expect: /^limits\.maxConcurrentTurns$/,
    stage: 0,
    add: (d) => void (d.limits.maxConcurrentTurns = 0)
  },
  {
    name: "a Control UI tokens file that does not exist",
    expect: /^ui\.tokensFile$/,
    add: (d) => void (d.ui = { ...d.ui, port: 0, tokensFile: "no-such-tokens-file" })
  },
  {
    name: "a Control UI on a host that is not loopback",
    expect: /^ui\.host$/,
    stage: 0,
    add: (d) => void (d.ui = { ...d.ui, port: 0, host: "0.0.0.0", tokens: ["0".repeat(64)] })
  },
  {
    name: "a routed Telegram connection whose token variable is not set",
    expect: /^connections\.tg\.tokenEnv$/,
    add: (d) => {
      d.connections.tg = { kind: "telegram", tokenEnv: "PYNCHY_TEST_UNSET_TG_TOKEN" }
      d.routes.push({ connection: "tg", place: "*", workspace: "main" })
    }
  },
  {
    name: "a route to a connection that is not declared",
    expect: /^routes\.\d+\.connection$/,
    add: (d) => void d.routes.push({ connection: "nowhere", place: "*", workspace: "main" })
  },
  {
    name: "an unknown key (a typo)",
    expect: /^workspaces\.0\.modle$/,
    stage: 0,
    add: (d) => void (d.workspaces[0]!.modle = "gpt-4o")
  },
  {
    name: "an OpenAI-compatible provider without a baseUrl",
    expect: /^providers\.\d+\.baseUrl$/,
    add: (d) => void d.providers.push({ name: "nourl", kind: "openai-compatible", models: ["m-nourl"] })
  }
]

const configOf = (picked: ReadonlyArray<number>) => {
  const d: Draft = {
    providers: [],
    connections: {},
    routes: [{ connection: "cli", place: "*", workspace: "main" }],
    workspaces: [{ id: "main" }],
    gateway: { modelGroups: [] },
    limits: {}
  }
  for (const i of picked) FRAGMENTS[i]!.add(d)
  return d
}

/** Writes the config into a fresh folder; both sides read it the same way (PYNCHY_CONFIG). */
const setUp = (config: Draft) => {
  const dir = tempDir("pynchy-check-")
  const file = path.join(dir, "pynchy.yaml")
  fs.writeFileSync(file, stringify(config))
  const env = ConfigProvider.fromMap(new Map([["PYNCHY_CONFIG", file], ["PYNCHY_DATA_DIR", path.join(dir, "data")], ["PYNCHY_EXECUTOR", "scripted"]]))
  return { dir, env }
}

const quiet = Logger.withMinimumLogLevel(LogLevel.None)

/** The real start path: the default host's layers, built until they fail (or start). */
const startPaths = (env: ConfigProvider.ConfigProvider) =>
  Effect.scoped(Layer.build(makeHostLive([]))).pipe(
    Effect.withConfigProvider(env),
    quiet,
    Effect.exit,
    Effect.map((exit) => {
      if (Exit.isSuccess(exit)) return { started: true, paths: [] as Array<string> }
      const errors = [...Cause.failures(exit.cause), ...Cause.defects(exit.cause)]
      return { started: false, paths: errors.flatMap((e) => startProblems(e).map((p) => p.path)), errors }
    })
  )

const checkPaths = (env: ConfigProvider.ConfigProvider) =>
  checkConfig.pipe(Effect.withConfigProvider(env), quiet, Effect.map((r) => r.problems.map((p) => p.path)))

describe("config check runs what start runs", () => {
  for (const [i, f] of FRAGMENTS.entries()) {
    it.effect(`${f.name}: start fails, and check fails naming ${f.expect.source}`, () =>
      Effect.gen(function* () {
        const { env } = setUp(configOf([i]))
        const start = yield* startPaths(env)
        const check = yield* checkPaths(env)
        assert.isFalse(start.started, "start should refuse this config")
        assert.isNotEmpty(start.paths, `start failed without a config path: ${String(start.errors)}`)
        for (const p of start.paths) assert.include(check, p)
        assert.isTrue(check.some((p) => f.expect.test(p)), `check said: ${check.join(", ")}`)
      }), 60_000)
  }

  it.effect("any mix of known mistakes: start fails, check fails on every path start names, and names every mistake in one run", () =>
    Effect.gen(function* () {
      const indices = fc.uniqueArray(fc.integer({ min: 0, max: FRAGMENTS.length - 1 }), { minLength: 2, maxLength: FRAGMENTS.length })
      const samples = fc.sample(indices, { numRuns: 8, seed: 20 })
      for (const picked of samples) {
        const { env } = setUp(configOf(picked))
        const start = yield* startPaths(env)
        const check = yield* checkPaths(env)
        assert.isFalse(start.started)
        for (const p of start.paths) assert.include(check, p, `start named ${p}; check said ${check.join(", ")}`)
        const blocked = picked.some((i) => FRAGMENTS[i]!.blocks === true)
        for (const i of picked.filter((i) => !blocked || FRAGMENTS[i]!.stage === 0)) assert.isTrue(check.some((p) => FRAGMENTS[i]!.expect.test(p)), `${FRAGMENTS[i]!.name}: check said ${check.join(", ")}`)
      }
    }), 300_000)

  it.effect("a good config passes the check", () =>
    Effect.gen(function* () {
      const { env } = setUp(configOf([]))
      const check = yield* checkConfig.pipe(Effect.withConfigProvider(env), quiet)
      assert.deepStrictEqual(check.problems, [])
      assert.isTrue(Option.isSome(check.loaded))
    }))
})
