/** A test host with Approvals on top, a real turn to ask from, and the approval notices it sent. */
import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Option, TestServices } from "effect"
import { makeTestHost } from "../../layers/test.js"
import { ApprovalStore } from "../../src/actions/ApprovalStore.js"
import { TurnStore } from "../../src/db/TurnStore.js"
import { ConversationId, type TurnId } from "../../src/domain/ids.js"
import { Ingest } from "../../src/pipeline/Ingest.js"
import { awaitSettled, recordingConfig, sentLines } from "../support/host.js"
import { eventually } from "../support/eventually.js"

export const room = ConversationId.make("test:room")

/** The test host (memory, or a database file), whose Approvals decide the replies its Ingest commits, and the ApprovalStore, in the current scope. */
export const approvalHost = (dir: string, databaseFile?: string) =>
  Effect.gen(function* () {
    const host = yield* Layer.build(makeTestHost(recordingConfig(dir), databaseFile === undefined ? {} : { databaseFile }))
    const store = yield* Layer.build(Layer.provide(ApprovalStore.layer, Layer.succeedContext(host)))
    return Context.merge(host, store)
  })

/** The first turn of `room` in a fresh database: one message in, its reply settled; its id. */
export const firstTurn = Effect.gen(function* () {
  const ingest = yield* Ingest
  const turns = yield* TurnStore
  yield* ingest.ingest({ connection: "test", place: "room", providerEventId: "e1", sender: "u", text: "hello" })
  yield* TestServices.provideLive(awaitSettled(room, 1))
  const [turn] = yield* turns.recent(room, 1)
  return turn!.id
})

export const approvalNotices = (dir: string) => sentLines(dir).filter((l) => l.text.startsWith("Approval needed"))

/** The code of the `n`th approval notice delivered to the chat (1-based), once it is there. */
export const noticeCode = (dir: string, n: number) =>
  eventually(() => {
    const notice = approvalNotices(dir)[n - 1]
    return notice === undefined ? undefined : Option.getOrThrow(Option.fromNullable(/approve ([a-z0-9]{6})/.exec(notice.text)?.[1]))
  }, { label: `approval notice ${n} in the chat` })

/**
 * The turn's next attempt, as `TurnStore.acquire` records it when it resumes a retried or
 * interrupted turn (`attempts = attempts + 1`): what a retry of the turn looks like to approvals.
 */
export const nextAttempt = (turnId: TurnId) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql`UPDATE turns SET attempts = attempts + 1 WHERE id = ${turnId}`).pipe(Effect.orDie)
