import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { makeTestHost } from "../../layers/test.js"
import { ConversationId } from "../../src/domain/ids.js"
import { Ingest } from "../../src/pipeline/Ingest.js"
import { tempDir } from "../support/db.js"
import { awaitSettled, recordingConfig, sentLines } from "../support/host.js"
import { skipWithout } from "../support/system.js"
import { awaitTurnEnd, runnerBundle, sandboxExecutor } from "./support.js"

const msg = (id: string, text: string, place = "room") => ({ connection: "test", place, providerEventId: id, sender: "u", text })

const withRuntime = (runtime: "bwrap" | "process", dir: string) => {
  const config = recordingConfig(dir)
  return { ...config, containerRuntime: runtime } as typeof config
}

/** A test host whose turns run the scripted core in the given sandbox runtime. */
const scriptedHost = (runtime: "bwrap" | "process") =>
  Effect.gen(function* () {
    const dir = tempDir()
    const runnerPath = yield* Effect.promise(runnerBundle)
    const config = withRuntime(runtime, dir)
    const ctx = yield* Layer.build(makeTestHost(config, { executor: sandboxExecutor(config, { runnerPath, defaultCore: "scripted" }) }))
    const { ingest } = yield* Effect.provide(Ingest, ctx)
    return { dir, ctx, ingest }
  })

for (const runtime of ["bwrap", "process"] as const) {
  describe.skipIf(runtime === "bwrap" && skipWithout("bwrap", "apt-get install bubblewrap"))(`a scripted turn through the ${runtime} sandbox`, () => {
    it.scopedLive("an ingested message is answered by the runner and the reply is sent", () =>
      Effect.gen(function* () {
        const { dir, ctx, ingest } = yield* scriptedHost(runtime)
        yield* ingest(msg("e1", "hello sandbox"))
        const conv = ConversationId.make("test:room")
        const settled = yield* awaitSettled(conv, 1).pipe(Effect.provide(ctx))
        assert.deepStrictEqual(settled.map((d) => [d.status, d.text]), [["sent", "echo: hello sandbox"]])
        assert.deepStrictEqual(sentLines(dir).map((l) => l.text), ["echo: hello sandbox"])
        const turn = yield* awaitTurnEnd(conv).pipe(Effect.provide(ctx))
        assert.strictEqual(turn.status, "completed")
        assert.match(turn.owner!.executor, /^sandbox:[a-f0-9]{12}$/)
        const sid = turn.owner!.executor.slice("sandbox:".length)
        const outcome = JSON.parse(fs.readFileSync(path.join(dir, "sandboxes", sid, "outcome.json"), "utf8"))
        assert.strictEqual(outcome.status, "done")
        assert.strictEqual(outcome.runtime, runtime)
        assert.include(fs.readFileSync(path.join(dir, "sessions", sid, "transcript.jsonl"), "utf8"), "\"kind\":\"done\"")
      }))

    it.scopedLive("a failing core fails the turn with its code, and the user gets a notice", () =>
      Effect.gen(function* () {
        const { ctx, ingest } = yield* scriptedHost(runtime)
        yield* ingest(msg("e1", "!fatal please"))
        const conv = ConversationId.make("test:room")
        const settled = yield* awaitSettled(conv, 1).pipe(Effect.provide(ctx))
        assert.strictEqual(settled[0]!.kind, "notice")
        const turn = yield* awaitTurnEnd(conv).pipe(Effect.provide(ctx))
        assert.strictEqual(turn.status, "failed")
        assert.match(turn.error ?? "", /^scripted_fatal/)
      }))
  })
}
