import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, FastCheck as fc } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { UNSUPPORTED_HOOKS } from "../../src/plugins/contributions.js"
import { HOOKS, type HookName } from "../../src/contracts/plugin.js"
import { buildRegistry, type Candidate } from "../../src/plugins/registry.js"
import { tempDir } from "../support/db.js"
import { skillFolder } from "./support.js"

const skills = tempDir("pynchy-skills-")
const fn = () => undefined
const coreModule = path.join(tempDir("pynchy-core-"), "core.mjs")
fs.writeFileSync(coreModule, "export default async () => {}\n", { mode: 0o644 })

/** A valid and a malformed contribution for every hook, by name. */
const make: { readonly [K in HookName]: { valid: (n: string) => unknown; malformed: (n: string) => unknown } } = {
  agentCore: { valid: (name) => ({ name, module: coreModule }), malformed: (name) => ({ name, run: fn }) },
  serviceHandler: {
    valid: (name) => ({ name, description: "does a thing", inputSchema: { type: "object" }, risk: "low", handler: fn }),
    malformed: (name) => ({ name, description: "does a thing", inputSchema: { type: "object" }, risk: "extreme", handler: fn })
  },
  actionSpecs: { valid: (id) => ({ id, surfaces: ["chat"], evidence: [] }), malformed: (id) => ({ id, surfaces: [], evidence: [] }) },
  skillPaths: {
    valid: (name) => (fs.existsSync(path.join(skills, name)) ? path.join(skills, name) : skillFolder(skills, name)),
    malformed: (name) => path.join(skills, "absent", name)
  },
  createChannel: { valid: (name) => ({ name, idempotentResends: false, send: fn }), malformed: (name) => ({ name, idempotentResends: false }) },
  connectionRuntime: { valid: (name) => ({ name, start: fn, close: fn, isReady: fn }), malformed: (name) => ({ name, start: fn, close: fn }) },
  speechSynthesizer: { valid: (name) => ({ name, synthesize: fn }), malformed: (name) => ({ name, synthesize: 1 }) },
  containerRuntime: { valid: (name) => ({ name, start: fn, kill: fn, isAlive: fn }), malformed: (name) => ({ name, start: fn, isAlive: fn }) },
  tunnel: { valid: (name) => ({ name, detect: fn }), malformed: () => ({ name: "", detect: fn }) },
  observer: { valid: (name) => ({ name, onEvent: fn }), malformed: (name) => ({ name, onEvent: null }) },
  mcpServerSpec: { valid: (name) => ({ name, command: "node", args: ["x.js"], where: "sandbox" }), malformed: (name) => ({ name, args: "x.js", where: "sandbox" }) },
  workspaceSpec: { valid: (id) => ({ id }), malformed: (id) => ({ id, unknownField: true }) }
}

const Mode = fc.constantFrom("plain", "promise", "effect", "throws", "rejects", "fails")
const Kind = fc.constantFrom("valid", "valid", "malformed", "duplicate")
const HookPlan = fc.record({
  hook: fc.constantFrom(...HOOKS),
  mode: Mode,
  bare: fc.boolean(),
  items: fc.array(fc.record({ kind: Kind, pick: fc.nat() }), { maxLength: 3 })
})
const Plan = fc.record({
  clean: fc.boolean(),
  plugins: fc.array(fc.uniqueArray(HookPlan, { selector: (h) => h.hook, maxLength: 4 }), { maxLength: 6 })
})
type Plan = typeof Plan extends fc.Arbitrary<infer A> ? A : never

/** Turns a plan into plugins plus the faults (plugin|hook|code) and contributions a correct registry reports. */
const realize = (plan: Plan) => {
  let counter = 0
  const holders = new Map<string, Array<string>>() // hook\0name -> plugins holding it
  const faults: Array<string> = []
  const candidates: Array<Candidate> = plan.plugins.map((hooks, p) => {
    const plugin: Record<string, unknown> = { name: `plugin-${p}` }
    for (const h of hooks) {
      const mode = plan.clean && ["throws", "rejects", "fails"].includes(h.mode) ? "plain" : h.mode
      const items = h.items.map(({ kind, pick }) => {
        const taken = [...holders.keys()].filter((k) => k.startsWith(`${h.hook}\u0000`)).map((k) => k.split("\u0000")[1]!)
        const effective = plan.clean ? "valid" : kind === "duplicate" && taken.length === 0 ? "valid" : kind
        if (effective === "malformed") {
          if (mode === "plain" || mode === "promise" || mode === "effect") faults.push(`plugin-${p}|${h.hook}|invalid_contribution`)
          return make[h.hook].malformed(`n${counter++}`)
        }
        const name = effective === "duplicate" ? taken[pick % taken.length]! : `n${counter++}`
        const settles = mode === "plain" || mode === "promise" || mode === "effect"
        if (settles && UNSUPPORTED_HOOKS.has(h.hook)) faults.push(`plugin-${p}|${h.hook}|hook_not_supported`)
        else if (settles) {
          const key = `${h.hook}\u0000${name}`
          holders.set(key, [...(holders.get(key) ?? []), `plugin-${p}`])
        }
        return make[h.hook].valid(name)
      })
      const value = h.bare && items.length === 1 ? items[0] : items.length === 0 && h.bare ? null : items
      if (mode === "throws" || mode === "rejects" || mode === "fails") faults.push(`plugin-${p}|${h.hook}|hook_failed`)
      plugin[h.hook] = mode === "plain" ? () => value
        : mode === "promise" ? async () => value
        : mode === "effect" ? () => Effect.succeed(value)
        : mode === "throws" ? () => { throw new Error("boom") }
        : mode === "rejects" ? () => Promise.reject(new Error("boom"))
        : () => Effect.fail("boom")
    }
    return { plugin, source: { _tag: "builtin" } }
  })
  for (const [key, plugins] of holders) {
    if (plugins.length > 1) for (const plugin of plugins) faults.push(`${plugin}|${key.split("\u0000")[0]}|duplicate_name`)
  }
  return { candidates, faults: faults.sort(), holders }
}

describe("buildRegistry (property)", () => {
  it.effect.prop(
    "accepts exactly the fault-free plugin sets and reports every fault by plugin, hook and code",
    [Plan],
    ([plan]) =>
      Effect.gen(function* () {
        const { candidates, faults, holders } = realize(plan)
        const result = yield* Effect.either(buildRegistry(candidates))
        if (faults.length === 0) {
          assert.isTrue(Either.isRight(result), Either.isLeft(result) ? result.left.message : "")
          const registry = (result as Either.Right<never, Effect.Effect.Success<ReturnType<typeof buildRegistry>>>).right
          for (const hook of HOOKS) {
            const expected = [...holders].filter(([k]) => k.startsWith(`${hook}\u0000`)).map(([k, ps]) => `${ps[0]}:${k.split("\u0000")[1]}`).sort()
            assert.deepStrictEqual(registry.byHook[hook].map((c) => `${c.plugin}:${c.name}`).sort(), expected)
          }
        } else {
          assert.isTrue(Either.isLeft(result))
          const reported = Either.isLeft(result) ? result.left.faults : []
          assert.deepStrictEqual(reported.map((f) => `${f.plugin}|${f.hook}|${f.code}`).sort(), faults)
          for (const f of reported) assert.isAbove(f.problem.length, 0)
        }
      }),
    { fastCheck: { numRuns: 200 } }
  )
})
