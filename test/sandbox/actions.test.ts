/** Host actions under policy: scoped to the workspace, input checked, high risk needs approval, rate limited, failures fail closed. */
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Fiber, TestClock } from "effect"
import { providersFromEnv } from "../../src/config/env-providers.js"
import { Approvals } from "../../src/actions/Approvals.js"
import { makeHostActions as makeOver } from "../../src/actions/HostActions.js"
import { Workspace } from "../../src/domain/workspace.js"
import { WorkspaceId } from "../../src/domain/ids.js"
import type { ServiceHandler } from "../../src/contracts/plugin.js"

const greet: ServiceHandler = {
  name: "hello.greet",
  description: "greets",
  inputSchema: { type: "object", properties: { name: { type: "string", minLength: 1 } }, required: ["name"], additionalProperties: false },
  risk: "low",
  handler: async ({ name }: { name: string }) => ({ text: `Hello, ${name}!` })
}
const drop: ServiceHandler = { name: "db.drop", description: "drops", inputSchema: { type: "object" }, risk: "high", handler: () => "dropped" }
const slow: ServiceHandler = { name: "slow.op", description: "never answers", inputSchema: { type: "object" }, risk: "low", handler: () => new Promise(() => {}) }
const broken: ServiceHandler = { name: "broken.op", description: "throws", inputSchema: { type: "object" }, risk: "medium", handler: () => { throw new Error("boom: secret") } }
const pay: ServiceHandler = { name: "pay.send", description: "pays", inputSchema: { type: "object" }, risk: "medium", handler: () => "paid" }

// A host with no one to ask: high-risk calls are refused outright.
const makeHostActions = (...args: Parameters<typeof makeOver>) => Effect.provide(makeOver(...args), Approvals.layerNone)

const ws = (actions: Array<string>) => Workspace.make({ id: WorkspaceId.make("main"), actions })
const ctx = { turnId: 1, conversationId: "test:room" }

const refusal = <A, E extends { code: string }>(e: Effect.Effect<A, E>) => Effect.map(Effect.flip(e), (x) => x.code)

describe("host actions", () => {
  it.effect("a workspace is offered only its enabled actions, named for the LLM", () =>
    Effect.gen(function* () {
      const actions = yield* makeHostActions([greet, drop], [])
      assert.deepStrictEqual(actions.toolsFor(ws(["hello.greet", "nope.missing"])).map((t) => [t.name, t.action]), [["hello__greet", "hello.greet"]])
      assert.deepStrictEqual(actions.toolsFor(ws([])), [])
    }))

  it.effect("an enabled low-risk action runs with decoded input; by tool name or action id", () =>
    Effect.gen(function* () {
      const actions = yield* makeHostActions([greet], [])
      assert.deepStrictEqual(yield* actions.call(ws(["hello.greet"]), "hello__greet", { name: "Ada" }, ctx), { text: "Hello, Ada!" })
      assert.deepStrictEqual(yield* actions.call(ws(["hello.greet"]), "hello.greet", { name: "Bo" }, ctx), { text: "Hello, Bo!" })
    }))

  it.effect("refusals fail closed with a code", () =>
    Effect.gen(function* () {
      const actions = yield* makeHostActions([greet, drop, broken], [])
      const w = ws(["hello.greet", "db.drop", "broken.op"])
      assert.strictEqual(yield* refusal(actions.call(ws([]), "hello__greet", { name: "x" }, ctx)), "not_enabled")
      assert.strictEqual(yield* refusal(actions.call(w, "nope", {}, ctx)), "unknown_action")
      assert.strictEqual(yield* refusal(actions.call(w, "hello__greet", { name: 5 }, ctx)), "invalid_input")
      assert.strictEqual(yield* refusal(actions.call(w, "hello__greet", { name: "x", extra: 1 }, ctx)), "invalid_input")
      assert.strictEqual(yield* refusal(actions.call(w, "db__drop", {}, ctx)), "approval_required")
      const failed = yield* Effect.flip(actions.call(w, "broken__op", {}, ctx))
      assert.strictEqual(failed.code, "action_failed")
      assert.notInclude(failed.reason, "secret")
    }))

  it.effect("an action spec's evidence is required input", () =>
    Effect.gen(function* () {
      const actions = yield* makeHostActions([pay], [{ id: "pay.send", surfaces: ["agent"], evidence: ["invoice"] }])
      const w = ws(["pay.send"])
      const missing = yield* Effect.flip(actions.call(w, "pay__send", {}, ctx))
      assert.strictEqual(missing.code, "invalid_input")
      assert.include(missing.reason, "input.invoice: evidence required")
      assert.strictEqual(yield* actions.call(w, "pay__send", { invoice: "INV-1" }, ctx), "paid")
    }))

  it.effect("a per-workspace rate limit, per minute on the Clock", () =>
    Effect.gen(function* () {
      const actions = yield* makeHostActions([greet], [], { ratePerMinute: 2 })
      const w = ws(["hello.greet"])
      yield* actions.call(w, "hello__greet", { name: "a" }, ctx)
      yield* actions.call(w, "hello__greet", { name: "b" }, ctx)
      assert.strictEqual(yield* refusal(actions.call(w, "hello__greet", { name: "c" }, ctx)), "rate_limited")
      yield* TestClock.adjust("61 seconds")
      assert.deepStrictEqual(yield* actions.call(w, "hello__greet", { name: "d" }, ctx), { text: "Hello, d!" })
    }))

  it.effect("a handler that never answers times out, closed", () =>
    Effect.gen(function* () {
      const actions = yield* makeHostActions([slow], [], { timeout: "5 seconds" })
      const fiber = yield* Effect.fork(Effect.flip(actions.call(ws(["slow.op"]), "slow__op", {}, ctx)))
      yield* TestClock.adjust("6 seconds")
      const e = yield* Fiber.join(fiber)
      assert.strictEqual(e.code, "action_timeout")
    }))

  it.effect("inputs are checked against the full JSON Schema: paths and rules, never values", () =>
    Effect.gen(function* () {
      const schema = { type: "object", properties: { n: { type: "integer", minimum: 1 }, tags: { type: "array", items: { type: "string" } }, mode: { enum: ["a", "b"] } }, required: ["n"] } as const
      const actions = yield* makeHostActions([{ ...greet, name: "shape.check", inputSchema: schema }], [])
      const w = ws(["shape.check"])
      const reason = (input: unknown) => Effect.map(Effect.flip(actions.call(w, "shape__check", input, ctx)), (e) => e.reason)
      assert.deepStrictEqual(yield* actions.call(w, "shape__check", { n: 2, tags: ["x"], mode: "a", name: "Ada" }, ctx), { text: "Hello, Ada!" })
      assert.strictEqual(
        yield* reason({ n: 0, tags: ["x", 3], mode: "c" }),
        "input.n: must be >= 1 (minimum); input.tags.1: must be string (type); input.mode: must be equal to one of the allowed values (enum)"
      )
      assert.strictEqual(yield* reason({}), "input.n: required")
      assert.strictEqual(yield* reason("x"), "input: must be object (type)")
    }))
})

describe("zero-config providers", () => {
  it.effect("a key in the environment becomes a provider with a default model; none gives none", () =>
    Effect.gen(function* () {
      const withEnv = (env: Record<string, string>) => Effect.withConfigProvider(providersFromEnv, ConfigProvider.fromMap(new Map(Object.entries(env))))
      assert.deepStrictEqual(yield* withEnv({}), [])
      const openai = yield* withEnv({ OPENAI_API_KEY: "sk-x" })
      assert.deepStrictEqual(openai.map((p) => [p.name, p.kind, p.apiKeyEnv, p.models]), [["openai", "openai", "OPENAI_API_KEY", ["gpt-4o-mini"]]])
      const both = yield* withEnv({ OPENAI_API_KEY: "a", ANTHROPIC_API_KEY: "b", PYNCHY_MODEL: "m" })
      assert.deepStrictEqual(both.map((p) => [p.kind, p.models[0]]), [["openai", "m"], ["anthropic", "m"]])
      assert.notInclude(JSON.stringify(both), "\"a\"")
    }))
})
