/**
 * `/new` through the whole pipeline (scripted executor): the context start moves, the user gets
 * one confirmation, no agent turn runs for it, and later turns see nothing from before it;
 * `pynchy conversations --json` (the built CLI) lists the conversation with its counts and start.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as path from "node:path"
import { makeTestHost } from "../../layers/test.js"
import { ContextStore } from "../../src/db/ContextStore.js"
import { TurnStore } from "../../src/db/TurnStore.js"
import { ConversationContext } from "../../src/pipeline/ConversationContext.js"
import { Ingest } from "../../src/pipeline/Ingest.js"
import { NEW_CONTEXT_NOTICE } from "../../src/pipeline/TurnRunner.js"
import { runCli } from "../support/cli.js"
import { tempDir } from "../support/db.js"
import { awaitLatestTurnEnded, awaitSettled, recordingConfig, sentLines } from "../support/host.js"
import { conv, inputFor } from "./support.js"

const msg = (id: string, text: string) => ({ connection: "test", place: "room", providerEventId: id, sender: "u", text })

describe("/new", () => {
  it.scopedLive("moves the context start, confirms once, runs no agent turn, and later history starts after it", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const ctx = yield* Layer.build(makeTestHost(recordingConfig(dir), { databaseFile: path.join(dir, "pynchy.db") }))
      const { ingest } = yield* Effect.provide(Ingest, ctx)
      yield* ingest(msg("e1", "my name is Zed"))
      yield* awaitSettled(conv, 1).pipe(Effect.provide(ctx))
      const ingested = yield* ingest(msg("e2", "/new"))
      yield* awaitSettled(conv, 2).pipe(Effect.provide(ctx))
      yield* ingest(msg("e3", "what is my name?"))
      yield* awaitSettled(conv, 3).pipe(Effect.provide(ctx))
      const sent = sentLines(dir)
      assert.deepStrictEqual(sent.map((l) => [l.kind, l.text]), [
        ["reply", "echo: my name is Zed"],
        ["notice", NEW_CONTEXT_NOTICE],
        ["reply", "echo: what is my name?"]
      ])
      const start = yield* Effect.flatMap(ContextStore, (s) => s.start(conv)).pipe(Effect.provide(ctx))
      assert.strictEqual(start.messageId, ingested.messageId)
      yield* awaitLatestTurnEnded(conv).pipe(Effect.provide(ctx))
      const turns = yield* Effect.flatMap(TurnStore, (t) => t.recent(conv, 10)).pipe(Effect.provide(ctx))
      assert.isTrue(turns.every((t) => t.status === "completed"))
      // A turn after the last one: its history holds only what followed /new.
      const memory = yield* Effect.provide(ConversationContext, ctx)
      const next = yield* memory.build(inputFor(turns[0]!.id + 1, [{ id: 1_000_000, text: "next", sender: "u" }]), null)
      assert.deepStrictEqual(next.history, [{ role: "user", text: "what is my name?" }, { role: "assistant", text: "echo: what is my name?" }])

      const r = yield* Effect.promise(() => runCli(["conversations", "--json"], { cwd: dir, env: { PYNCHY_DATA_DIR: dir } }))
      assert.strictEqual(r.code, 0, r.stderr)
      const listed = JSON.parse(r.stdout)
      // Three inbound messages and the three outbound ones the outbox wrote.
      assert.deepStrictEqual(listed.map((c: any) => [c.id, c.workspace, c.messages, c.contextStart]), [[conv, "main", 6, ingested.messageId]])
      const text = yield* Effect.promise(() => runCli(["conversations"], { cwd: dir, env: { PYNCHY_DATA_DIR: dir } }))
      assert.include(text.stdout, `after message ${ingested.messageId} (/new)`)
    }))

  it.scopedLive("a /new in the middle of a batch: the agent answers only what follows it", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const ctx = yield* Layer.build(makeTestHost(recordingConfig(dir)))
      const { ingest } = yield* Effect.provide(Ingest, ctx)
      // A delayed first turn lets the next three arrive together.
      yield* ingest(msg("e1", "one"))
      yield* awaitSettled(conv, 1).pipe(Effect.provide(ctx))
      const ingestAll = yield* Effect.provide(Ingest, ctx)
      yield* Effect.forEach(["before", "/new", "after"], (t, i) => ingestAll.ingest(msg(`b${i}`, t)), { discard: true })
      yield* awaitSettled(conv, 3).pipe(Effect.provide(ctx))
      const texts = sentLines(dir).map((l) => l.text)
      assert.include(texts, NEW_CONTEXT_NOTICE)
      assert.include(texts, "echo: after")
      assert.strictEqual(texts.filter((t) => t === NEW_CONTEXT_NOTICE).length, 1)
      assert.notInclude(texts, "echo: /new")
    }))
})
