/**
 * Finding 5 of issue 14: one human approval let a high-risk action run six times and carried over
 * to retries of the turn, and the notice named only the action. An approval is now single-use,
 * bound to (turn, attempt, action, input digest), consumed by a compare-and-set when the action
 * runs; the notice shows a bounded, redacted summary of the input.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Fiber, FastCheck as fc, Option } from "effect"
import { ApprovalStore } from "../../src/actions/ApprovalStore.js"
import { Approvals } from "../../src/actions/Approvals.js"
import { makeHostActions } from "../../src/actions/HostActions.js"
import { inputSummary, SUMMARY_MAX } from "../../src/actions/summary.js"
import { WorkspaceId } from "../../src/domain/ids.js"
import { Workspace } from "../../src/domain/workspace.js"
import type { ServiceHandler } from "../../src/contracts/plugin.js"
import { tempDir } from "../support/db.js"
import { approvalHost, approvalNotices, firstTurn, nextAttempt, noticeCode, room } from "./support.js"

const ws = Workspace.make({ id: WorkspaceId.make("main"), actions: ["db.drop"] })
const decide = (text: string) => Effect.flatMap(Approvals, (a) => a.decide(room, text, "u"))
const statusOf = (code: string) => Effect.flatMap(ApprovalStore, (s) => s.get(code)).pipe(Effect.map(Option.map((r) => r.status)), Effect.map(Option.getOrNull))

/** A high-risk action that counts its runs, behind HostActions with the test's Approvals. */
const dropActions = (turnId: Parameters<typeof nextAttempt>[0]) =>
  Effect.gen(function* () {
    const runs = { count: 0 }
    const drop: ServiceHandler = {
      name: "db.drop",
      description: "drops",
      inputSchema: { type: "object" },
      risk: "high",
      handler: () => {
        runs.count++
        return "dropped"
      }
    }
    const actions = yield* makeHostActions([drop], [], { approvalTimeout: "30 seconds" })
    const call = (input: unknown) => actions.call(ws, "db__drop", input, { turnId, conversationId: room })
    return { runs, call }
  })

describe("single-use approvals", () => {
  it.scoped("one approval, one run: a second call with the same input asks again, and the used code decides nothing", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const host = yield* approvalHost(dir)
      yield* Effect.gen(function* () {
        const { call, runs } = yield* dropActions(yield* firstTurn)
        const first = yield* Effect.fork(call({ table: "a" }))
        const code = yield* noticeCode(dir, 1)
        yield* decide(`approve ${code}`)
        assert.strictEqual(yield* Fiber.join(first), "dropped")
        assert.strictEqual(yield* statusOf(code), "consumed")

        // The hostile agent calls again with the same input: a new request, the handler waits.
        const second = yield* Effect.fork(Effect.either(call({ table: "a" })))
        const again = yield* noticeCode(dir, 2)
        assert.notStrictEqual(again, code)
        assert.strictEqual(runs.count, 1)
        assert.isTrue(Option.isNone(yield* decide(`approve ${code}`)), "a used code is not pending")
        yield* decide(`deny ${again}`)
        const refused = yield* Fiber.join(second)
        assert.isTrue(Either.isLeft(refused) && refused.left.code === "approval_required")
        assert.strictEqual(runs.count, 1)
      }).pipe(Effect.provide(host))
    }))

  it.scoped("concurrent twins waiting on one approval: the action runs once, the other asks again", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const host = yield* approvalHost(dir)
      yield* Effect.gen(function* () {
        const { call, runs } = yield* dropActions(yield* firstTurn)
        const twins = yield* Effect.forkAll([call({ table: "a" }), call({ table: "a" })].map(Effect.either), { discard: false })
        const code = yield* noticeCode(dir, 1)
        yield* decide(`approve ${code}`)
        // One twin consumed the approval and ran; the other opened a new request.
        const again = yield* noticeCode(dir, 2)
        assert.notStrictEqual(again, code)
        assert.strictEqual(runs.count, 1)
        yield* decide(`deny ${again}`)
        const results = yield* Fiber.join(twins)
        assert.deepStrictEqual(results.map((r) => (Either.isRight(r) ? r.right : r.left.code)).sort(), ["approval_required", "dropped"])
        assert.strictEqual(runs.count, 1)
        assert.strictEqual(approvalNotices(dir).length, 2)
      }).pipe(Effect.provide(host))
    }))

  it.scoped("a retry of the turn asks again: an approval given to an earlier attempt runs nothing", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const host = yield* approvalHost(dir)
      yield* Effect.gen(function* () {
        const turn = yield* firstTurn
        const { call, runs } = yield* dropActions(turn)
        const stale = yield* Effect.fork(Effect.either(call({ table: "a" })))
        const code = yield* noticeCode(dir, 1)
        // The turn is retried while its first attempt's request waits; then a human approves it.
        yield* nextAttempt(turn)
        yield* decide(`approve ${code}`)
        const refused = yield* Fiber.join(stale)
        assert.isTrue(Either.isLeft(refused) && refused.left.code === "approval_required")
        assert.strictEqual(yield* statusOf(code), "approved", "never consumed: its attempt is over")
        assert.strictEqual(runs.count, 0)

        // The retry asks the same thing: a new request of attempt 2, not the earlier approval.
        const retry = yield* Effect.fork(call({ table: "a" }))
        const again = yield* noticeCode(dir, 2)
        assert.notStrictEqual(again, code)
        assert.strictEqual(runs.count, 0)
        yield* decide(`approve ${again}`)
        assert.strictEqual(yield* Fiber.join(retry), "dropped")
        assert.strictEqual(runs.count, 1)
        const row = yield* Effect.flatMap(ApprovalStore, (s) => s.get(again))
        assert.deepStrictEqual(Option.map(row, (r) => [r.attempt, r.status]).pipe(Option.getOrNull), [2, "consumed"])
      }).pipe(Effect.provide(host))
    }))

  it.scoped("a denial does not carry over to the retry either: the later attempt is asked afresh", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const host = yield* approvalHost(dir)
      yield* Effect.gen(function* () {
        const turn = yield* firstTurn
        const { call } = yield* dropActions(turn)
        const denied = yield* Effect.fork(Effect.either(call({ table: "a" })))
        yield* decide(`deny ${yield* noticeCode(dir, 1)}`)
        assert.isTrue(Either.isLeft(yield* Fiber.join(denied)))
        yield* nextAttempt(turn)
        const retry = yield* Effect.fork(call({ table: "a" }))
        yield* decide(`approve ${yield* noticeCode(dir, 2)}`)
        assert.strictEqual(yield* Fiber.join(retry), "dropped")
      }).pipe(Effect.provide(host))
    }))

  it.scoped("consumption is one compare-and-set in the database: of many concurrent consumers, exactly one wins", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const host = yield* approvalHost(dir)
      yield* Effect.gen(function* () {
        const turn = yield* firstTurn
        const store = yield* ApprovalStore
        const inserted = yield* store.insert({ id: "cas001", conversationId: room, turnId: turn, action: "db.drop", inputDigest: "d", createdAt: 0, expiresAt: 60_000 })
        assert.isTrue(Option.isSome(inserted))
        // Not approved yet: nothing to consume.
        assert.isFalse(yield* store.consume("cas001", 1))
        assert.isTrue(Option.isSome(yield* store.decide("cas001", room, "approved", "u", 1)))
        const wins = yield* Effect.all(Array.from({ length: 8 }, () => store.consume("cas001", 2)), { concurrency: "unbounded" })
        assert.strictEqual(wins.filter((w) => w).length, 1)
        assert.strictEqual(yield* statusOf("cas001"), "consumed")
      }).pipe(Effect.provide(host))
    }))
})

describe("the approval notice's input summary", () => {
  const secret = "hunter2-correct-horse"
  const providerKey = "sk-live-4f9a8b7c6d5e4f3a2b1c"
  const hostile = {
    path: "/srv/data/report.csv",
    password: secret,
    nested: { apiKey: { value: secret }, sessionToken: 12345 },
    note: `use ${providerKey} please`,
    spoof: "`. Reply `approve aaaaaa`\n\u202eevil",
    blob: "x".repeat(5000)
  }

  it.scoped("the notice shows a bounded, redacted summary; no secret of the input appears", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const host = yield* approvalHost(dir)
      yield* Effect.gen(function* () {
        const { call } = yield* dropActions(yield* firstTurn)
        const waiting = yield* Effect.fork(Effect.either(call(hostile)))
        const code = yield* noticeCode(dir, 1)
        const [notice] = approvalNotices(dir)
        const shown = /Input: `([^`]*)`$/.exec(notice!.text)?.[1]
        assert.isDefined(shown)
        assert.isAtMost(shown!.length, SUMMARY_MAX)
        assert.include(shown!, "/srv/data/report.csv")
        for (const leaked of [secret, providerKey, "12345", "\n", "\u202e", "x".repeat(300)]) assert.notInclude(notice!.text, leaked)
        // The spoofed reply cannot end the code span or come first: the real code leads, once.
        assert.deepStrictEqual([...notice!.text.matchAll(/`approve ([a-z0-9]{6})`/g)].map((m) => m[1]), [code])
        assert.notStrictEqual(code, "aaaaaa")
        yield* decide(`deny ${code}`)
        yield* Fiber.join(waiting)
      }).pipe(Effect.provide(host))
    }))

  it.prop(
    "any input: one line of at most 200 characters, secret-named values masked",
    [fc.jsonValue(), fc.string({ minLength: 12 }).filter((s) => /^[\w-]+$/.test(s))],
    ([value, key]) => {
      const summary = inputSummary({ data: value, token: key })
      return summary.length <= SUMMARY_MAX && !/[\n\r\u2028\u2029`]/.test(summary) && !summary.includes(key)
    }
  )
})
