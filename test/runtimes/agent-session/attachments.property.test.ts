import { assert, describe, it } from "@effect/vitest"
import { Effect, FastCheck as fc } from "effect"
import { ConversationId } from "../../../src/domain/ids.js"
import { AgentSessions } from "../../../src/runtimes/agent-session/AgentSessions.js"
import { NotAttached } from "../../../src/runtimes/agent-session/errors.js"
import { fakeRuntime, sessionsOn, statusOf, storeKinds } from "./support.js"

const conversations = ["terminal:a", "terminal:b", "matrix:c"].map((c) => ConversationId.make(c))
const conversation = fc.nat({ max: conversations.length - 1 })

type Op =
  | { readonly op: "attach"; readonly c: number; readonly session: string }
  | { readonly op: "detach"; readonly c: number }
  | { readonly op: "observe"; readonly c: number; readonly state: "running" | "idle" | "completed" }
  | { readonly op: "stale"; readonly c: number }
  | { readonly op: "restart" }

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant("attach" as const), c: conversation, session: fc.constantFrom("s1", "s2", "s3") }),
  fc.record({ op: fc.constant("detach" as const), c: conversation }),
  fc.record({ op: fc.constant("observe" as const), c: conversation, state: fc.constantFrom("running" as const, "idle" as const, "completed" as const) }),
  fc.record({ op: fc.constant("stale" as const), c: conversation }),
  fc.constant({ op: "restart" as const })
)

/** Splits the ops into processes: a restart ends one and starts the next on the same storage. */
const processes = (ops: ReadonlyArray<Op>) => {
  const out: Array<Array<Exclude<Op, { op: "restart" }>>> = [[]]
  for (const o of ops) {
    if (o.op === "restart") out.push([])
    else out[out.length - 1]!.push(o)
  }
  return out
}

const durable = storeKinds.filter((k) => k.durable)

describe("attachment lineage and observation tokens (property)", () => {
  it.effect.prop(
    "one current record per attached conversation, tokens strictly increasing across restarts, stale observations refused",
    [fc.array(opArb, { minLength: 1, maxLength: 40 }), fc.nat({ max: durable.length - 1 })],
    ([ops, kind]) => {
      const where = durable[kind]!.location()
      const attached = new Set<number>()
      let highest = 0
      return Effect.gen(function* () {
        for (const steps of processes(ops)) {
          const fake = fakeRuntime()
          yield* Effect.gen(function* () {
            const sessions = yield* AgentSessions
            yield* fake.register
            for (const step of steps) {
              const id = conversations[step.c]!
              switch (step.op) {
                case "attach": {
                  yield* sessions.attach(id, { runtimeId: "fake", sessionId: step.session })
                  attached.add(step.c)
                  break
                }
                case "detach": {
                  const result = yield* Effect.either(sessions.detach(id))
                  assert.strictEqual(result._tag === "Right", attached.has(step.c))
                  attached.delete(step.c)
                  break
                }
                case "observe": {
                  for (const s of ["s1", "s2", "s3"]) fake.states.set(s, step.state)
                  const result = yield* Effect.either(sessions.inspect(id))
                  if (!attached.has(step.c)) {
                    assert.isTrue(result._tag === "Left" && result.left instanceof NotAttached)
                    break
                  }
                  assert.strictEqual(result._tag, "Right")
                  if (result._tag !== "Right") break
                  assert.isTrue(result.right.applied, "an observation after any restart must land")
                  assert.isAbove(result.right.token, highest)
                  highest = result.right.token
                  assert.strictEqual(result.right.attachment.observationToken, highest)
                  break
                }
                case "stale": {
                  if (!attached.has(step.c)) break
                  const current = yield* sessions.current(id)
                  if (current._tag !== "Some") return assert.fail("attached conversation without a current record")
                  const older = yield* sessions.nextObservationToken
                  const newer = yield* sessions.nextObservationToken
                  assert.isAbove(older, highest)
                  assert.isTrue(yield* sessions.applyStatus(current.value.id, newer, statusOf("idle")))
                  assert.isFalse(yield* sessions.applyStatus(current.value.id, older, statusOf("running")))
                  highest = newer
                  break
                }
              }
              for (const [i, c] of conversations.entries()) {
                const history = yield* sessions.history(c)
                assert.strictEqual(history.filter((r) => r.state === "current").length, attached.has(i) ? 1 : 0)
                // Lineage: every replacement names a record of the same conversation.
                for (const r of history) if (r.replaces !== null) assert.isTrue(history.some((p) => p.id === r.replaces))
              }
            }
          }).pipe(Effect.provide(sessionsOn(where.open())))
        }
      })
    },
    { fastCheck: { numRuns: 60 } }
  )
})
