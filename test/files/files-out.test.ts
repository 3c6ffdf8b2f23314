/**
 * Files out on a test host with SQLite: what the agent leaves at the top of its outbox goes with
 * the turn's last reply (stored with the delivery, each file its own claimed part), is removed so
 * the next turn does not send it again, and what is refused is named in a line of the reply.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { makeTestHost } from "../../layers/test.js"
import { sendInParts } from "../../src/channels/parts.js"
import * as Database from "../../src/db/Database.js"
import { DeliveryStore } from "../../src/db/DeliveryStore.js"
import { storesOn, tempDir } from "../support/db.js"
import { eventually } from "../support/eventually.js"
import { filesConfig, filesRuntime, recordingAgent } from "./support.js"

describe("files out", () => {
  it.scopedLive("the outbox goes with the last reply once; refused files are named in it", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const outbox = path.join(dir, "workspaces", "main", "outbox")
      const agent = recordingAgent((text) => {
        if (!text.startsWith("make")) return
        fs.mkdirSync(path.join(outbox, "nested"), { recursive: true })
        fs.writeFileSync(path.join(outbox, "chart.png"), "PNGDATA")
        fs.writeFileSync(path.join(outbox, "report.pdf"), "%PDF-1.4")
        fs.writeFileSync(path.join(outbox, "huge.txt"), "x".repeat(1_001))
        fs.writeFileSync(path.join(outbox, "run.sh"), "#!/bin/sh")
        fs.writeFileSync(path.join(outbox, "nested", "deep.txt"), "not top level")
      })
      const runtime = filesRuntime()
      const ctx = yield* Layer.build(makeTestHost(filesConfig(dir), { runtimes: [runtime.entry], executor: agent.layer }))
      yield* Effect.promise(() => runtime.context().ingestMessage({ connection: "files", place: "p", providerEventId: "m1", sender: "ann", text: "make a chart" }))
      const first = yield* eventually(Effect.sync(() => runtime.sent[0]), { label: "the first reply" })
      assert.strictEqual(first.kind, "reply")
      assert.deepStrictEqual(first.files?.map((f) => [f.n, f.name, f.mimeType, new TextDecoder().decode(f.bytes)]), [
        [1, "chart.png", "image/png", "PNGDATA"],
        [2, "report.pdf", "application/pdf", "%PDF-1.4"]
      ])
      assert.match(first.text, /^saw: make a chart/)
      assert.include(first.text, "Not attached: huge.txt: too large")
      assert.include(first.text, "run.sh: type not allowed (application/octet-stream)")
      // Taken from the outbox (a folder is left alone); stored with the delivery.
      // (removed right after the reply is recorded, so possibly after it is sent)
      yield* eventually(Effect.sync(() => (fs.readdirSync(outbox).join() === "nested" ? true : undefined)), { label: "the outbox emptied" })
      const stored = yield* Effect.provide(DeliveryStore, ctx).pipe(Effect.flatMap((s) => s.filesOf(first.idempotencyKey)))
      assert.deepStrictEqual(stored.map((f) => f.name), ["chart.png", "report.pdf"])
      // The next turn's reply carries nothing.
      yield* Effect.promise(() => runtime.context().ingestMessage({ connection: "files", place: "p", providerEventId: "m2", sender: "ann", text: "thanks" }))
      const second = yield* eventually(Effect.sync(() => runtime.sent[1]), { label: "the second reply" })
      assert.isUndefined(second.files)
      assert.notInclude(second.text, "Not attached")
    }))

  it.effect("each file is its own claimed part: a resend sends only the files not yet sent", () =>
    Effect.gen(function* () {
      const store = yield* DeliveryStore
      const files = [1, 2, 3].map((n) => ({ n, name: `f${n}.txt`, mimeType: "text/plain", bytes: new Uint8Array([n]) }))
      const sent: Array<string> = []
      let failOn: number | undefined = 2
      const send = () => sendInParts({
        delivery: { idempotencyKey: "t1:0", text: "hi", files },
        limit: 4_000,
        sendPart: ({ key }) => Effect.sync(() => void sent.push(key)),
        sendFile: (file, key) => file.n === failOn ? Effect.fail("refused") : Effect.sync(() => void sent.push(key)),
        failure: () => ({ notSent: true, reason: "refused" })
      })
      // Every file is tried; the one surely not sent fails the delivery, so the outbox sends it again.
      const first = yield* Effect.flip(send())
      assert.strictEqual(first._tag, "PartsNotSent")
      assert.include(first.message, "file 2: refused")
      assert.deepStrictEqual(sent, ["t1:0#1", "t1:0#file1", "t1:0#file3"])
      failOn = undefined
      yield* send()
      assert.deepStrictEqual(sent, ["t1:0#1", "t1:0#file1", "t1:0#file3", "t1:0#file2"])
      yield* send()
      assert.strictEqual(sent.length, 4)
      // The store keeps the first files a delivery was given.
      yield* store.storeFiles("t1:0", files)
      yield* store.storeFiles("t1:0", [{ name: "other.txt", mimeType: "text/plain", bytes: new Uint8Array([9]) }])
      assert.deepStrictEqual((yield* store.filesOf("t1:0")).map((f) => f.name), ["f1.txt", "f2.txt", "f3.txt"])
    }).pipe(Effect.provide(storesOn(Database.layerMemory))))

  it.effect("a file whose send may have arrived makes the delivery unknown, and is never sent again", () =>
    Effect.gen(function* () {
      const files = [1, 2].map((n) => ({ n, name: `f${n}.txt`, mimeType: "text/plain", bytes: new Uint8Array([n]) }))
      const sent: Array<string> = []
      const send = (lostOn?: number) => sendInParts({
        delivery: { idempotencyKey: "t2:0", text: "hi", files },
        limit: 4_000,
        sendPart: ({ key }) => Effect.sync(() => void sent.push(key)),
        sendFile: (file, key) => file.n === lostOn ? Effect.fail("no answer") : Effect.sync(() => void sent.push(key)),
        failure: () => ({ notSent: false, reason: "no answer" })
      })
      const first = yield* Effect.flip(send(1))
      assert.strictEqual(first._tag, "PartsOutcomeUnknown")
      assert.include(first.message, "file 1 of the reply may be missing")
      assert.deepStrictEqual(sent, ["t2:0#1", "t2:0#file2"])
      // The resend finds it `sending`: the platform may have it, so it stays unknown and unsent.
      assert.strictEqual((yield* Effect.flip(send()))._tag, "PartsOutcomeUnknown")
      assert.deepStrictEqual(sent, ["t2:0#1", "t2:0#file2"])
    }).pipe(Effect.provide(storesOn(Database.layerMemory))))
})
