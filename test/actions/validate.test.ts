/**
 * Finding 8 of issue 14: action input schemas failed open (pattern, const, format, maxItems,
 * oneOf, exclusiveMaximum and multipleOf were ignored), so a handler ran with a path-traversal and
 * shell payload. Inputs are now checked by ajv. A plugin's schemas compile at startup, and one that
 * does not compile stops startup with a typed error naming the plugin and the action; the host's
 * own compile on their first call, and a test here compiles them.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Exit, Layer } from "effect"
import { makeTestHost } from "../../layers/test.js"
import { Approvals } from "../../src/actions/Approvals.js"
import { buildHostActions as buildOver } from "../../src/actions/HostActions.js"
import { ActionSchemaInvalid, checksOnFirstUse, compileHandlers } from "../../src/actions/validate.js"
import { WorkspaceId } from "../../src/domain/ids.js"
import { AgentTasks } from "../../src/schedules/AgentTasks.js"
import { Workspace } from "../../src/domain/workspace.js"
import type { BuiltinPlugin } from "../../src/builtins/list.js"
import type { ServiceHandler } from "../../src/contracts/plugin.js"
import { tempDir } from "../support/db.js"
import { recordingConfig } from "../support/host.js"

const ctx = { turnId: 1, conversationId: "test:room" }
const buildHostActions = (...args: Parameters<typeof buildOver>) => Effect.provide(buildOver(...args), Approvals.layerNone)
const ws = Workspace.make({ id: WorkspaceId.make("main"), actions: ["files.read"] })

/** A low-risk action with this input schema that counts its runs. */
const counted = (properties: Record<string, unknown>) => {
  const runs = { count: 0 }
  const handler: ServiceHandler = {
    name: "files.read",
    description: "reads",
    inputSchema: { type: "object", properties, required: Object.keys(properties), additionalProperties: false },
    risk: "low",
    handler: () => {
      runs.count++
      return "ran"
    }
  }
  return { runs, handler }
}

// Each keyword the hand-written subset ignored: a schema using it, an input that conforms, and one
// that violates it (and would have passed before).
const keywords = [
  { keyword: "pattern", schema: { type: "string", pattern: "^[a-z]+$" }, ok: "abc", bad: "ABC; rm -rf /" },
  { keyword: "const", schema: { const: "read-only" }, ok: "read-only", bad: "read-write" },
  { keyword: "format", schema: { type: "string", format: "email" }, ok: "ada@example.org", bad: "not-an-email" },
  { keyword: "maxItems", schema: { type: "array", items: { type: "string" }, maxItems: 2 }, ok: ["a", "b"], bad: ["a", "b", "c"] },
  { keyword: "oneOf", schema: { oneOf: [{ type: "integer" }, { type: "number", minimum: 0 }] }, ok: -1, bad: 3 },
  { keyword: "exclusiveMaximum", schema: { type: "number", exclusiveMaximum: 10 }, ok: 9.5, bad: 10.5 },
  { keyword: "multipleOf", schema: { type: "integer", multipleOf: 5 }, ok: 15, bad: 7 }
] as const

describe("action input schemas (ajv: a plugin's compiled at startup, the host's own on first call)", () => {
  for (const { bad, keyword, ok, schema } of keywords) {
    it.effect(`${keyword}: a violating input is refused and the handler never runs`, () =>
      Effect.gen(function* () {
        const { handler, runs } = counted({ value: schema })
        const actions = yield* buildHostActions([handler], [])
        const refusal = yield* Effect.flip(actions.call(ws, "files__read", { value: bad }, ctx))
        assert.strictEqual(refusal.code, "invalid_input")
        assert.include(refusal.reason, `input.value: `)
        assert.include(refusal.reason, `(${keyword})`)
        assert.notInclude(refusal.reason, JSON.stringify(bad))
        assert.strictEqual(runs.count, 0)
        assert.strictEqual(yield* actions.call(ws, "files__read", { value: ok }, ctx), "ran")
        assert.strictEqual(runs.count, 1)
      }))
  }

  it.effect("the finding's path-traversal and shell payload is refused; the handler never runs", () =>
    Effect.gen(function* () {
      const { handler, runs } = counted({ path: { type: "string", pattern: "^(?!.*\\.\\.)[A-Za-z0-9_./-]{1,200}$", maxLength: 200 } })
      const actions = yield* buildHostActions([handler], [])
      const payload = "../../etc/passwd; rm -rf /"
      const refusal = yield* Effect.flip(actions.call(ws, "files__read", { path: payload }, ctx))
      assert.deepStrictEqual([refusal.code, refusal.reason], ["invalid_input", `input.path: must match pattern "^(?!.*\\.\\.)[A-Za-z0-9_./-]{1,200}$" (pattern)`])
      assert.notInclude(refusal.message, "passwd")
      assert.strictEqual(runs.count, 0)
      assert.strictEqual(yield* actions.call(ws, "files__read", { path: "notes/today.md" }, ctx), "ran")
    }))

  it.effect("every problem is listed by path and rule; agent-chosen names that are not identifiers are not echoed", () =>
    Effect.gen(function* () {
      const { handler, runs } = counted({ n: { type: "integer", minimum: 1 }, tags: { type: "array", items: { type: "string" } } })
      const actions = yield* buildHostActions([handler], [])
      const refusal = yield* Effect.flip(actions.call(ws, "files__read", { n: 0, tags: ["x", 3], "a\nINFO forged": 1, extra: true }, ctx))
      assert.deepStrictEqual(refusal.reason.split("; "), [
        "input.*: not allowed (additionalProperties)",
        "input.extra: not allowed (additionalProperties)",
        "input.n: must be >= 1 (minimum)",
        "input.tags.1: must be string (type)"
      ])
      assert.deepStrictEqual((yield* Effect.flip(actions.call(ws, "files__read", "x", ctx))).reason, "input: must be object (type)")
      assert.deepStrictEqual((yield* Effect.flip(actions.call(ws, "files__read", { n: 1 }, ctx))).reason, "input.tags: required")
      assert.strictEqual(runs.count, 0)
    }))

  it.effect("a schema ajv cannot compile fails the build: every one listed with its action; nothing is skipped", () =>
    Effect.gen(function* () {
      const schemaOf = (inputSchema: Record<string, unknown>, name: string): ServiceHandler =>
        ({ name, description: "d", inputSchema: { type: "object", ...inputSchema }, risk: "low", handler: () => "ran" })
      const error = yield* Effect.flip(buildHostActions([
        { plugin: "p1", value: schemaOf({ properties: { x: { type: "string", format: "no-such-format" } } }, "a.format") },
        { plugin: "p1", value: schemaOf({ propertees: {} }, "a.typo") },
        { plugin: "p2", value: schemaOf({ properties: { n: { minimum: 1 } } }, "b.untyped") },
        { plugin: "p2", value: schemaOf({ properties: { x: { $ref: "https://example.org/remote.json" } } }, "b.remote") },
        { plugin: "p2", value: schemaOf({ properties: { x: { type: "string" } } }, "b.fine") }
      ], []))
      assert.instanceOf(error, ActionSchemaInvalid)
      assert.deepStrictEqual(error.faults.map((f) => [f.plugin, f.action]), [["p1", "a.format"], ["p1", "a.typo"], ["p2", "b.untyped"], ["p2", "b.remote"]])
      assert.include(error.faults[0]!.problem, "no-such-format")
      assert.include(error.message, "plugin 'p1', action 'a.typo'")
    }))

  it.scoped("startup: a host whose plugin contributes an uncompilable schema does not start, with a typed error naming plugin and action", () =>
    Effect.gen(function* () {
      const bad: BuiltinPlugin = {
        name: "bad-schemas",
        load: async () => ({
          name: "bad-schemas",
          serviceHandler: () => ({
            name: "files.read",
            description: "reads",
            inputSchema: { type: "object", properties: { path: { type: "string", format: "posix-path" } } },
            risk: "low",
            handler: () => "ran"
          })
        })
      }
      const exit = yield* Effect.exit(Layer.build(makeTestHost(recordingConfig(tempDir()), { plugins: [bad] })))
      assert.isTrue(Exit.isFailure(exit))
      const error = Exit.isFailure(exit) ? exit.cause : undefined
      const failure = error !== undefined && error._tag === "Fail" ? error.error : undefined
      assert.instanceOf(failure, ActionSchemaInvalid)
      if (failure instanceof ActionSchemaInvalid) {
        assert.deepStrictEqual(failure.faults.map((f) => [f.plugin, f.action]), [["bad-schemas", "files.read"]])
      }
    }))

  it.scoped("the host's own schemas (the agent tasks), compiled on first call rather than at startup, all compile", () =>
    Effect.gen(function* () {
      const ctx = yield* Layer.build(makeTestHost(recordingConfig(tempDir())))
      const tasks = yield* Effect.provide(AgentTasks, ctx)
      assert.deepStrictEqual(tasks.handlers.map((o) => o.handler.name), ["tasks.schedule", "tasks.list", "tasks.cancel"])
      const compiled = compileHandlers(tasks.handlers.map((o) => ({ plugin: "host", value: o.handler })))
      assert.isTrue(Either.isRight(compiled), Either.isLeft(compiled) ? compiled.left.message : "")
    }))

  it("a host schema that does not compile refuses every call, from its first (fail closed)", () => {
    const checks = checksOnFirstUse([
      { name: "a.typo", inputSchema: { type: "object", propertees: {} } },
      { name: "a.fine", inputSchema: { type: "object", properties: { id: { type: "string", minLength: 1 } }, required: ["id"], additionalProperties: false } }
    ])
    for (let i = 0; i < 2; i++) assert.match(checks.get("a.typo")!({})[0]!, /^input: the action's schema does not compile \(.*propertees/)
    assert.deepStrictEqual(checks.get("a.fine")!({ id: "x" }), [])
    assert.deepStrictEqual(checks.get("a.fine")!({ id: "" }), ["input.id: must NOT have fewer than 1 characters (minLength)"])
  })
})
