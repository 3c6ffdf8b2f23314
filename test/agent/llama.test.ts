/**
 * The streamed path against a real server: the runner in bwrap, through the gateway, to llama.cpp's
 * llama-server from the sid root (tiny model: its text is noise, its protocol is real). Skips with
 * a message where the sid root or the model is missing.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { skipWithoutSidRoot, startLlama } from "../support/llama.js"
import { skipWithout } from "../support/system.js"
import { runTurn } from "./harness.js"

const unused = () => {
  throw new Error("the scripted upstream is not used with llama-server")
}

describe.skipIf(skipWithout("bwrap", "apt-get install bubblewrap") || skipWithoutSidRoot())("the runner's streamed cores against llama-server", () => {
  for (const core of ["openai", "anthropic"] as const) {
    it.scopedLive(`${core}: text deltas arrive before the one reply, and together they are the reply`, () =>
      Effect.gen(function* () {
        const llama = yield* startLlama
        const run = yield* runTurn({ core, baseUrl: llama.baseUrl, script: unused, spec: { sandboxTools: [], maxToolRounds: 0, history: [{ role: "user", text: "hi" }, { role: "assistant", text: "hello" }] } })
        const errors = run.events.filter((e) => e._tag === "error")
        assert.deepStrictEqual(errors, [], `${JSON.stringify(errors)}\n${llama.output().slice(-2_000)}`)
        const deltas = run.events.filter((e) => e._tag === "text_delta").map((e) => (e as { text: string }).text)
        const replies = run.events.filter((e) => e._tag === "reply").map((e) => (e as { text: string }).text)
        assert.strictEqual(replies.length, 1)
        const replyAt = run.events.findIndex((e) => e._tag === "reply")
        assert.isTrue(run.events.slice(0, replyAt).every((e) => e._tag === "text_delta"))
        assert.isAbove(deltas.length, 1)
        assert.strictEqual(deltas.join(""), replies[0])
      }), 120_000)
  }
})
