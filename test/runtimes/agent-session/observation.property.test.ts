import { assert, describe, it } from "@effect/vitest"
import { FastCheck as fc, Schema } from "effect"
import { AgentSessionState, AgentSessionStatus, completedTurnStates, terminalStates } from "../../../src/domain/attachment.js"
import { normalizeObservation } from "../../../src/runtimes/agent-session/observation.js"
import type { SessionRef } from "../../../src/runtimes/agent-session/runtime.js"

const ref: SessionRef = { runtime: "rt", provider: "p", sessionId: "s1", metadata: { from: "ref" } }
const vocabulary = new Set<string>(AgentSessionState.literals)
const isStatus = Schema.is(AgentSessionStatus)

// Any JSON, and JSON objects that lean towards the observation's own field names and values.
const field = fc.constantFrom(
  "state", "alive", "startedAt", "lastEventAt", "latestResponse", "finalResponse", "detail", "error", "termination",
  "providerSessionId", "remoteUrl", "host", "metadata", "runtime", "sessionId", "provider"
)
const value = fc.oneof(
  fc.jsonValue(),
  fc.constantFrom(...AgentSessionState.literals, "finished", "", "2026-12-01T10:00:00Z", "not a date"),
  fc.record({ reason: fc.jsonValue(), at: fc.jsonValue(), exitCode: fc.jsonValue(), message: fc.jsonValue() }, { requiredKeys: [] }),
  fc.double()
)
const observation = fc.oneof(fc.jsonValue(), fc.dictionary(field, value))

describe("normalizeObservation", () => {
  it.prop("any JSON an observation may be normalizes without throwing to a valid status in the closed vocabulary", [observation, fc.integer()], ([answer, now]) => {
    const s = normalizeObservation(ref, answer, now)
    assert.isTrue(isStatus(s))
    assert.isTrue(vocabulary.has(s.state))
    // Identity is the ref's, whatever the answer says.
    assert.deepStrictEqual([s.runtime, s.provider, s.sessionId, s.reconciledAt], ["rt", "p", "s1", now])
    if (s.finalResponse !== undefined) assert.include(completedTurnStates, s.state)
    if (s.termination !== undefined) assert.include(terminalStates, s.state)
    for (const t of [s.startedAt, s.lastEventAt, s.termination?.at]) if (t !== undefined) assert.isTrue(Number.isFinite(t))
    for (const v of Object.values(s.metadata ?? {})) assert.strictEqual(typeof v, "string")
    // The answer is decoded back from its own encoding: what is stored reads back the same.
    assert.deepStrictEqual(Schema.decodeSync(AgentSessionStatus)(Schema.encodeSync(AgentSessionStatus)(s)), s)
  }, { fastCheck: { numRuns: 2_000 } })
})
