/**
 * A host on Postgres answers end to end: the real bin started with PYNCHY_DATABASE_URL on a
 * scratch cluster takes a message on its HTTP channel, runs the turn and delivers the reply; the
 * rows are in Postgres, no SQLite file is made, and a restart finds the reply in the durable record.
 */
import { SqlClient } from "@effect/sql"
import { afterAll, assert, describe, it } from "vitest"
import { Effect, Redacted } from "effect"
import * as fs from "node:fs"
import { hashToken } from "../../src/channels/http/settings.js"
import * as Database from "../../src/db/Database.js"
import { hostProject, killAllHosts, stopHost } from "../channels/host-process.js"
import { scratchPostgres, stopPostgres } from "../support/db.js"
import { eventually } from "../support/eventually.js"
import { skipWithoutPostgres } from "../support/postgres.js"
import { freePort } from "../support/synapse.js"

const skip = skipWithoutPostgres()
afterAll(() => {
  killAllHosts()
  stopPostgres()
})

const TOKEN = "pg-token"

const replies = async (base: string) => {
  const res = await fetch(`${base}/replies?after=0`, { headers: { authorization: `Bearer ${TOKEN}` } })
  return (await res.json() as { replies: Array<{ id: number; text: string }> }).replies
}

describe.skipIf(skip)("a host on Postgres (real bin)", () => {
  it("answers a message, keeps its rows in Postgres, and finds the reply again after a restart", async () => {
    const url = scratchPostgres().createDatabase()
    const port = await freePort()
    // A Postgres host is a cluster runner: its own runner port, so tests can run side by side.
    const clusterPort = await freePort()
    const project = hostProject({
      yaml: () => [
        "workspaces: [{ id: main, agentCore: scripted }]",
        "routes: [{ connection: web, place: '*', workspace: main }]",
        `connections: { web: { kind: http, port: ${port}, tokens: ['${hashToken(TOKEN)}'] } }`,
        `cluster: { host: 127.0.0.1, port: ${clusterPort} }`
      ],
      env: { PYNCHY_DATABASE_URL: url }
    })
    const base = `http://127.0.0.1:${port}/v1/conversations/room`
    let host = await project.start()
    try {
      const posted = await fetch(`${base}/messages`, {
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}`, "idempotency-key": "m-1" },
        body: JSON.stringify({ text: "hello postgres" })
      })
      assert.strictEqual(posted.status, 202)
      const got = await Effect.runPromise(eventually(async () => {
        const r = await replies(base)
        return r.length > 0 ? r : undefined
      }, { label: "the reply" }))
      assert.deepStrictEqual(got.map((r) => r.text), ["echo: hello postgres"])
      // The reply goes out before its turn commits its end: stop only after that.
      await Effect.runPromise(eventually(Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const turns = yield* sql<{ status: string }>`SELECT status FROM turns`
        return turns.length === 1 && turns[0]!.status === "completed" ? true : undefined
      }).pipe(Effect.provide(Database.layerPostgres(Redacted.make(url)))), { label: "the turn completed" }))
    } finally {
      await stopHost(host)
    }
    assert.isFalse(fs.existsSync(project.db), "no SQLite file next to a Postgres host")
    // The rows are Postgres's: the message, its completed turn, the sent reply, the host's run.
    const rows = await Effect.runPromise(Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      return yield* sql<{ what: string }>`SELECT 'in:' || text AS what FROM messages WHERE direction = 'in'
        UNION ALL SELECT 'turn:' || status FROM turns
        UNION ALL SELECT 'delivery:' || status FROM deliveries
        UNION ALL SELECT 'run:' || CASE WHEN stopped_at IS NULL THEN 'running' ELSE 'stopped' END FROM host_runs`
    }).pipe(Effect.provide(Database.layerPostgres(Redacted.make(url)))))
    assert.deepStrictEqual(rows.map((r) => r.what).sort(), ["delivery:sent", "in:hello postgres", "run:stopped", "turn:completed"])
    // The CLI reads the same database: status names it (without a password) and counts its rows.
    const status = await project.cli(["status"])
    assert.include(status.stdout, `database  ${url}`, status.stderr)
    assert.notInclude(status.stdout, "no database yet")
    host = await project.start()
    try {
      assert.deepStrictEqual((await replies(base)).map((r) => r.text), ["echo: hello postgres"])
    } finally {
      await stopHost(host)
    }
  }, 180_000)
})
