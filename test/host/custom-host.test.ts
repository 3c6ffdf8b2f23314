import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { makeEmbeddedHost } from "../../layers/examples/custom-host.js"
import { Ingest } from "../../src/pipeline/Ingest.js"
import { eventually } from "../support/eventually.js"

describe("a custom host composed by swapping layers (layers/examples/custom-host.ts)", () => {
  it.scopedLive("answers through its own channel plugin, with an in-memory database", () =>
    Effect.gen(function* () {
      const replies: Array<string> = []
      const host = yield* Layer.build(makeEmbeddedHost((d) => replies.push(`${d.conversationId} ${d.text}`)))
      const { ingest } = yield* Effect.provide(Ingest, host)
      yield* ingest({ connection: "app", place: "u1", providerEventId: "e1", sender: "ada", text: "hi" })
      yield* eventually(() => replies.length > 0 || undefined, { label: "a reply through the host's own channel" })
      assert.deepStrictEqual(replies, ["app:u1 echo: hi"])
    }))
})
