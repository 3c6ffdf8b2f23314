/** Human approval of high-risk host actions: asked in the conversation, decided by a reply, closed on timeout, durable. */
import { assert, describe, it } from "@effect/vitest"
import { type Duration, Effect, Fiber, Layer, Option, TestClock } from "effect"
import * as path from "node:path"
import { makeHostActions } from "../../src/actions/HostActions.js"
import { ApprovalStore } from "../../src/actions/ApprovalStore.js"
import { Approvals, decideReply, inputDigest } from "../../src/actions/Approvals.js"
import { ConversationId, WorkspaceId } from "../../src/domain/ids.js"
import { Workspace } from "../../src/domain/workspace.js"
import type { ServiceHandler } from "../../src/contracts/plugin.js"
import { ingestClient } from "../../src/cli/ingest-client.js"
import { HostConfig } from "../../src/config/HostConfig.js"
import * as Database from "../../src/db/Database.js"
import * as Stores from "../../src/db/Stores.js"
import { Ingest } from "../../src/pipeline/Ingest.js"
import { tempDir } from "../support/db.js"
import { recordingConfig } from "../support/host.js"
import { approvalHost, approvalNotices, firstTurn, noticeCode, room } from "./support.js"

const ask = (turnId: Parameters<Approvals.Service["request"]>[0]["turnId"], input: unknown = { table: "customers-7f3" }, deadline: Duration.DurationInput = "120 seconds") =>
  Effect.flatMap(Approvals, (a) => a.request({ conversationId: room, turnId, action: "db.drop", input, risk: "high", deadline }))
const decide = (text: string, conversation = room) => Effect.flatMap(Approvals, (a) => a.decide(conversation, text, "u"))
const rowOf = (code: string) => Effect.flatMap(ApprovalStore, (s) => s.get(code))

describe("approvals", () => {
  it.scoped("approve: the request was delivered to the chat and the answer is approved", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const host = yield* approvalHost(dir)
      yield* Effect.gen(function* () {
        const turn = yield* firstTurn
        const waiting = yield* Effect.fork(ask(turn))
        const code = yield* noticeCode(dir, 1)
        const [notice] = approvalNotices(dir)
        assert.strictEqual(notice!.kind, "notice")
        assert.strictEqual(
          notice!.text,
          `Approval needed: the assistant wants to run \`db.drop\` (risk: high). Reply \`approve ${code}\` or \`deny ${code}\` within 120 s. Input: \`{"table":"customers-7f3"}\``
        )
        assert.deepStrictEqual(yield* decide(`  Approve ${code} `), Option.some({ code, status: "approved" as const }))
        assert.strictEqual(yield* Fiber.join(waiting), "approved")
        const row = yield* rowOf(code)
        assert.isTrue(Option.isSome(row))
        if (Option.isSome(row)) {
          // Consumed by the caller it was granted to, bound to the turn's attempt.
          assert.deepStrictEqual([row.value.status, row.value.turnId, row.value.attempt, row.value.decidedBy], ["consumed", turn, 1, "u"])
          // The digest, never the input.
          assert.strictEqual(row.value.inputDigest, inputDigest({ table: "customers-7f3" }))
          assert.notInclude(JSON.stringify(row.value), "customers-7f3")
        }
        // Decided once: a second reply changes nothing.
        assert.isTrue(Option.isNone(yield* decide(`deny ${code}`)))
      }).pipe(Effect.provide(host))
    }))

  it.scoped("deny: the answer is denied", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const host = yield* approvalHost(dir)
      yield* Effect.gen(function* () {
        const waiting = yield* Effect.fork(ask(yield* firstTurn))
        const code = yield* noticeCode(dir, 1)
        assert.deepStrictEqual(yield* decide(`DENY ${code}`), Option.some({ code, status: "denied" as const }))
        assert.strictEqual(yield* Fiber.join(waiting), "denied")
      }).pipe(Effect.provide(host))
    }))

  it.scoped("another conversation's reply and non-matching text do not decide", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const host = yield* approvalHost(dir)
      yield* Effect.gen(function* () {
        const waiting = yield* Effect.fork(ask(yield* firstTurn))
        const code = yield* noticeCode(dir, 1)
        assert.isTrue(Option.isNone(yield* decide(`approve ${code}`, ConversationId.make("test:elsewhere"))))
        for (const text of ["approve", `please approve ${code}`, `approve ${code} now`, `approve ${code}x`, "approve zzzzzz", `yes ${code}`, "hello"]) {
          assert.isTrue(Option.isNone(yield* decide(text)), text)
        }
        const row = yield* rowOf(code)
        assert.strictEqual(Option.map(row, (r) => r.status).pipe(Option.getOrNull), "pending")
        assert.isTrue(Option.isSome(yield* decide(`approve ${code}`)))
        assert.strictEqual(yield* Fiber.join(waiting), "approved")
      }).pipe(Effect.provide(host))
    }))

  it.scoped("a reply decided by another process (no waiter here) is seen at the next re-check of the row", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const host = yield* approvalHost(dir)
      yield* Effect.gen(function* () {
        const waiting = yield* Effect.fork(ask(yield* firstTurn))
        const code = yield* noticeCode(dir, 1)
        assert.deepStrictEqual(yield* decideReply(room, `deny ${code}`, "cli"), Option.some({ code, status: "denied" as const }))
        while (Option.isNone(yield* Fiber.poll(waiting))) yield* TestClock.adjust("1 second")
        assert.strictEqual(yield* Fiber.join(waiting), "denied")
      }).pipe(Effect.provide(host))
    }))

  it.scoped("a reply committed through the host's Ingest decides, and wakes the waiter at once", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const host = yield* approvalHost(dir)
      yield* Effect.gen(function* () {
        const waiting = yield* Effect.fork(ask(yield* firstTurn))
        const code = yield* noticeCode(dir, 1)
        const ingest = yield* Ingest
        yield* ingest.ingest({ connection: "test", place: "room", providerEventId: "reply-1", sender: "ada", text: `approve ${code}` })
        // No clock moves here: only the waiter's wake-up (not the re-check of the row) can end it.
        assert.strictEqual(yield* Fiber.join(waiting), "approved")
        assert.strictEqual(Option.map(yield* rowOf(code), (r) => r.decidedBy).pipe(Option.getOrNull), "ada")
      }).pipe(Effect.provide(host))
    }))

  it.scoped("a reply committed by a client's ingest (another stack on the same database file) decides before the client closes; the host reads the row", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const file = path.join(dir, "pynchy.db")
      const host = yield* approvalHost(dir, file)
      yield* Effect.gen(function* () {
        const waiting = yield* Effect.fork(ask(yield* firstTurn))
        const code = yield* noticeCode(dir, 1)
        // What `pynchy send` runs: the client stack, closed as soon as its ingest returns.
        const client = Layer.provideMerge(ingestClient, Layer.provideMerge(Layer.provideMerge(Stores.layer, Database.layerFile(file)), HostConfig.layerFrom(recordingConfig(dir))))
        yield* Effect.scoped(Effect.flatMap(Layer.build(client), (ctx) =>
          Effect.flatMap(Effect.provide(Ingest, ctx), (i) => i.ingest({ connection: "test", place: "room", providerEventId: "cli-1", sender: "cli", text: `deny ${code}` }))))
        assert.deepStrictEqual(Option.map(yield* rowOf(code), (r) => [r.status, r.decidedBy]).pipe(Option.getOrNull), ["denied", "cli"])
        while (Option.isNone(yield* Fiber.poll(waiting))) yield* TestClock.adjust("1 second")
        assert.strictEqual(yield* Fiber.join(waiting), "denied")
      }).pipe(Effect.provide(host))
    }))

  it.scoped("past the deadline: expired, closed; a late reply, and the same question in the same attempt, change nothing", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const host = yield* approvalHost(dir)
      yield* Effect.gen(function* () {
        const turn = yield* firstTurn
        const waiting = yield* Effect.fork(ask(turn, { table: "t" }, "30 seconds"))
        const code = yield* noticeCode(dir, 1)
        yield* TestClock.adjust("31 seconds")
        assert.strictEqual(yield* Fiber.join(waiting), "expired")
        assert.strictEqual(Option.map(yield* rowOf(code), (r) => r.status).pipe(Option.getOrNull), "expired")
        assert.isTrue(Option.isNone(yield* decide(`approve ${code}`)))
        assert.strictEqual(yield* ask(turn, { table: "t" }, "30 seconds"), "expired")
        assert.strictEqual(approvalNotices(dir).length, 1)
      }).pipe(Effect.provide(host))
    }))

  it.scoped("across a restart: a pending request is waited for again under its code; a used approval is asked for again", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const file = path.join(dir, "pynchy.db")
      const { code, pendingCode, turn } = yield* Effect.scoped(
        Effect.gen(function* () {
          const host = yield* approvalHost(dir, file)
          return yield* Effect.gen(function* () {
            const turn = yield* firstTurn
            const waiting = yield* Effect.fork(ask(turn))
            const code = yield* noticeCode(dir, 1)
            yield* decide(`approve ${code}`)
            assert.strictEqual(yield* Fiber.join(waiting), "approved")
            // A second request still pending when the host stops (its waiter dies with the host).
            yield* Effect.forkScoped(ask(turn, { table: "other" }))
            return { code, pendingCode: yield* noticeCode(dir, 2), turn }
          }).pipe(Effect.provide(host))
        })
      )
      const host = yield* approvalHost(dir, file)
      yield* Effect.gen(function* () {
        // The pending one is waited for again under its own code and deadline, then decided here.
        const waiting = yield* Effect.fork(ask(turn, { table: "other" }))
        assert.isTrue(Option.isSome(yield* decide(`approve ${pendingCode}`)))
        // Whether the reply beat the waiter or not, the row is re-read every second until then.
        while (Option.isNone(yield* Fiber.poll(waiting))) yield* TestClock.adjust("1 second")
        assert.strictEqual(yield* Fiber.join(waiting), "approved")
        // The first approval was used before the restart: the same question asks again.
        const again = yield* Effect.fork(ask(turn))
        const third = yield* noticeCode(dir, 3)
        assert.notStrictEqual(third, code)
        yield* decide(`deny ${third}`)
        assert.strictEqual(yield* Fiber.join(again), "denied")
        assert.deepStrictEqual(approvalNotices(dir).map((n) => /approve ([a-z0-9]{6})/.exec(n.text)?.[1]), [code, pendingCode, third])
      }).pipe(Effect.provide(host))
    }))
})

describe("host actions with approvals", () => {
  let runs = 0
  const drop: ServiceHandler = {
    name: "db.drop",
    description: "drops",
    inputSchema: { type: "object" },
    risk: "high",
    handler: () => {
      runs++
      return "dropped"
    }
  }
  const ws = Workspace.make({ id: WorkspaceId.make("main"), actions: ["db.drop"] })

  it.scoped("a high-risk handler runs after approval, and is refused when denied or on timeout", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const host = yield* approvalHost(dir)
      yield* Effect.gen(function* () {
        const turnId = yield* firstTurn
        const actions = yield* makeHostActions([drop], [], { approvalTimeout: "30 seconds" })
        const call = (input: unknown) => actions.call(ws, "db__drop", input, { turnId, conversationId: room })
        runs = 0

        const approved = yield* Effect.fork(call({ table: "a" }))
        yield* decide(`approve ${yield* noticeCode(dir, 1)}`)
        assert.strictEqual(yield* Fiber.join(approved), "dropped")
        assert.strictEqual(runs, 1)

        const denied = yield* Effect.fork(Effect.flip(call({ table: "b" })))
        yield* decide(`deny ${yield* noticeCode(dir, 2)}`)
        const refusal = yield* Fiber.join(denied)
        assert.deepStrictEqual([refusal.code, refusal.reason], ["approval_required", "not approved"])

        const late = yield* Effect.fork(Effect.flip(call({ table: "c" })))
        yield* noticeCode(dir, 3)
        yield* TestClock.adjust("31 seconds")
        const timedOut = yield* Fiber.join(late)
        assert.deepStrictEqual([timedOut.code, timedOut.reason], ["approval_required", "approval timed out"])
        assert.strictEqual(runs, 1)
      }).pipe(Effect.provide(host))
    }))

  it.effect("on a host with no one to ask (Approvals.layerNone) a high-risk call is refused outright", () =>
    Effect.gen(function* () {
      runs = 0
      const actions = yield* makeHostActions([drop], [])
      const refusal = yield* Effect.flip(actions.call(ws, "db__drop", {}, { turnId: 1, conversationId: "test:room" }))
      assert.deepStrictEqual([refusal.code, refusal.reason], ["approval_required", "high-risk actions need human approval, which this host cannot ask for"])
      assert.strictEqual(runs, 0)
    }).pipe(Effect.provide(Approvals.layerNone)))
})
