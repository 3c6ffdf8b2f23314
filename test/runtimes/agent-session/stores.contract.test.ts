import { assert, describe, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { ConversationId } from "../../../src/domain/ids.js"
import { AttachmentStore } from "../../../src/runtimes/agent-session/AttachmentStore.js"
import { AttachmentStoreUnreadable } from "../../../src/runtimes/agent-session/errors.js"
import { tempDir } from "../../support/db.js"
import { statusOf, storeKinds } from "./support.js"

const a = ConversationId.make("terminal:a")
const b = ConversationId.make("terminal:b")
const target = (conversationId: ConversationId, sessionId: string, now = 1) => ({ conversationId, runtimeId: "rt", provider: "p", sessionId, now })
const running = statusOf("running")
const idle = statusOf("idle", { finalResponse: "done" })

describe.each(storeKinds)("AttachmentStore on $name", ({ location, durable }) => {
  it.effect("attach, replace (lineage kept) and detach; one current per conversation", () =>
    Effect.gen(function* () {
      const store = yield* AttachmentStore
      const first = yield* store.attach(target(a, "s1", 10))
      assert.strictEqual(first.attachment.state, "current")
      assert.isNull(first.attachment.replaces)
      assert.isTrue(Option.isNone(first.superseded))
      yield* store.attach(target(b, "s9", 11))
      const second = yield* store.attach(target(a, "s2", 20))
      assert.strictEqual(second.attachment.replaces, first.attachment.id)
      assert.strictEqual(Option.getOrThrow(second.superseded).state, "superseded")
      assert.strictEqual(Option.getOrThrow(yield* store.current(a)).sessionId, "s2")
      const history = yield* store.history(a)
      assert.deepStrictEqual(history.map((r) => [r.sessionId, r.state]), [["s1", "superseded"], ["s2", "current"]])
      assert.deepStrictEqual((yield* store.currents).map((r) => r.sessionId).sort(), ["s2", "s9"])
      const detached = yield* store.detach(a, 30)
      assert.strictEqual(Option.getOrThrow(detached).state, "detached")
      assert.isTrue(Option.isNone(yield* store.current(a)))
      assert.isTrue(Option.isNone(yield* store.detach(a, 31)))
      const again = yield* store.attach(target(a, "s3", 40))
      assert.isNull(again.attachment.replaces)
      assert.deepStrictEqual((yield* store.history(a)).map((r) => r.state), ["superseded", "detached", "current"])
    }).pipe(Effect.provide(location().open())))

  it.effect("applyStatus is a compare-and-set on the observation token, current records only", () =>
    Effect.gen(function* () {
      const store = yield* AttachmentStore
      const { attachment } = yield* store.attach(target(a, "s1"))
      assert.isTrue(yield* store.applyStatus(attachment.id, 1, running, 2))
      assert.isFalse(yield* store.applyStatus(attachment.id, 1, idle, 3))
      assert.isTrue(yield* store.applyStatus(attachment.id, 5, idle, 4))
      assert.isFalse(yield* store.applyStatus(attachment.id, 4, running, 5))
      const stored = Option.getOrThrow(yield* store.current(a))
      assert.strictEqual(stored.observationToken, 5)
      assert.deepStrictEqual(stored.lastStatus, idle)
      yield* store.attach(target(a, "s2"))
      // Superseded: its last observation stays, and no later one lands on it.
      assert.isFalse(yield* store.applyStatus(attachment.id, 9, running, 6))
      assert.strictEqual(yield* store.maxObservationToken, 5)
    }).pipe(Effect.provide(location().open())))

  if (durable) {
    it.effect("records, lineage and tokens survive a reopen", () => {
      const where = location()
      return Effect.gen(function* () {
        yield* Effect.gen(function* () {
          const store = yield* AttachmentStore
          const { attachment } = yield* store.attach(target(a, "s1"))
          yield* store.applyStatus(attachment.id, 7, idle, 2)
          yield* store.attach(target(a, "s2"))
        }).pipe(Effect.provide(where.open()))
        yield* Effect.gen(function* () {
          const store = yield* AttachmentStore
          assert.strictEqual(yield* store.maxObservationToken, 7)
          const history = yield* store.history(a)
          assert.deepStrictEqual(history.map((r) => [r.sessionId, r.state, r.observationToken]), [["s1", "superseded", 7], ["s2", "current", 0]])
          assert.deepStrictEqual(history[0]!.lastStatus, idle)
          assert.strictEqual(history[1]!.replaces, history[0]!.id)
          // Ids keep counting after a reload.
          const third = yield* store.attach(target(a, "s3"))
          assert.isAbove(third.attachment.id, history[1]!.id)
        }).pipe(Effect.provide(where.open()))
      })
    })
  }
})

describe("directory store files", () => {
  it.effect("is <dir>/<agentId>.attachments.json, written whole, and a broken file is a typed error", () =>
    Effect.gen(function* () {
      const dir = tempDir("pynchy-att-")
      yield* Effect.gen(function* () {
        const store = yield* AttachmentStore
        yield* store.attach(target(a, "s1"))
      }).pipe(Effect.provide(AttachmentStore.layerDirectory({ dir, agentId: "helper" })))
      assert.deepStrictEqual(fs.readdirSync(dir), ["helper.attachments.json"])
      const file = path.join(dir, "helper.attachments.json")
      const content = JSON.parse(fs.readFileSync(file, "utf8"))
      assert.strictEqual(content.version, 2)
      assert.strictEqual(content.attachments[0].sessionId, "s1")
      fs.writeFileSync(file, "{ not json")
      const broken = yield* Effect.flip(Effect.provide(AttachmentStore, AttachmentStore.layerDirectory({ dir, agentId: "helper" })))
      assert.instanceOf(broken, AttachmentStoreUnreadable)
      assert.strictEqual(broken.file, file)
      const badId = yield* Effect.flip(Effect.provide(AttachmentStore, AttachmentStore.layerDirectory({ dir, agentId: "../escape" })))
      assert.instanceOf(badId, AttachmentStoreUnreadable)
    }))

  it.effect("a version 1 file (session named sessionRef, statuses in the old words) reads back: ids and tokens kept, statuses dropped", () =>
    Effect.gen(function* () {
      const dir = tempDir("pynchy-att-")
      const record = {
        id: 1, conversationId: "terminal:a", runtimeId: "rt", provider: "p", sessionRef: "work", state: "current", replaces: null,
        observationToken: 5, lastStatus: { state: "finished", output: "old" }, createdAt: 1, updatedAt: 2
      }
      fs.writeFileSync(path.join(dir, "old.attachments.json"), JSON.stringify({ version: 1, attachments: [record] }))
      const store = yield* Effect.provide(AttachmentStore, AttachmentStore.layerDirectory({ dir, agentId: "old" }))
      const current = Option.getOrThrow(yield* store.current(a))
      assert.deepStrictEqual([current.sessionId, current.observationToken, current.lastStatus, current.metadata], ["work", 5, null, null])
      assert.strictEqual(yield* store.maxObservationToken, 5)
    }))
})
