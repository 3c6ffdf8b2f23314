/**
 * Three real hosts (the built bin, process sandbox, scripted core) on one scratch Postgres, each an
 * @effect/cluster runner. The HTTP connection `web` is a cluster singleton: exactly one host
 * listens for it at a time (each host has its own port, so the test sees which one). Messages
 * spread over 20 conversations are answered exactly once; then the host holding `web` is killed
 * with -9 in the middle of a turn, the connection moves to a survivor, and every message (those
 * before, the one in flight, and those sent after) is still answered exactly once.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Redacted } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, assert, describe, it } from "vitest"
import { hashToken } from "../../src/channels/http/settings.js"
import * as Database from "../../src/db/Database.js"
import { type HostProcess, type HostProject, hostProject, killAllHosts, killHard, stopHost } from "../channels/host-process.js"
import { scratchPostgres, stopPostgres, tempDir } from "../support/db.js"
import { eventually } from "../support/eventually.js"
import { skipWithoutPostgres } from "../support/postgres.js"
import { freePort } from "../support/synapse.js"

const skip = skipWithoutPostgres()
afterAll(() => {
  killAllHosts()
  stopPostgres()
})

const TOKEN = "cluster-token"
const CONVERSATIONS = 20
const auth = { authorization: `Bearer ${TOKEN}` }

interface Node {
  readonly name: string
  readonly project: HostProject
  readonly httpPort: number
  readonly runner: string
  host?: HostProcess
}

describe.skipIf(skip)("three hosts on one Postgres (real bins, kill -9)", () => {
  it("answers every message exactly once, and moves the connection of a killed host to a survivor", async () => {
    const url = scratchPostgres().createDatabase()
    const onDb = <A>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
      Effect.runPromise(Effect.flatMap(SqlClient.SqlClient, f).pipe(Effect.provide(Database.layerPostgres(Redacted.make(url))), Effect.scoped) as Effect.Effect<A>)
    const nodes: Array<Node> = []
    for (const name of ["a", "b", "c"]) {
      const httpPort = await freePort()
      const clusterPort = await freePort()
      const project = hostProject({
        dir: tempDir(`pynchy-cluster-${name}-`),
        yaml: () => [
          "containerRuntime: process",
          "workspaces: [{ id: main, agentCore: scripted }]",
          "routes: [{ connection: web, place: '*', workspace: main }, { connection: cli, place: '*', workspace: main }]",
          `connections: { web: { kind: http, port: ${httpPort}, tokens: ['${hashToken(TOKEN)}'] } }`,
          `cluster: { host: 127.0.0.1, port: ${clusterPort}, shardLockExpirationMs: 3000, shardLockRefreshMs: 1000, refreshAssignmentsMs: 500, shards: 30 }`
        ],
        env: { PYNCHY_DATABASE_URL: url }
      })
      nodes.push({ name, project, httpPort, runner: `127.0.0.1:${clusterPort}` })
    }
    try {
      // All three at once on the empty database: the first migration must be safe between sessions.
      const started = await Promise.allSettled(nodes.map(async (node) => {
        node.host = await node.project.start()
      }))
      for (const s of started) if (s.status === "rejected") throw s.reason

      // Settled: every shard is locked, and by three runners.
      await Effect.runPromise(eventually(async () => {
        const rows = await onDb((sql) => sql<{ address: string; n: number }>`SELECT address, COUNT(*)::int AS n FROM cluster_locks GROUP BY address`)
        return rows.length === 3 && rows.reduce((s, r) => s + r.n, 0) === 30 ? rows : undefined
      }, { label: "30 shards locked by 3 runners", timeout: "120 seconds" }))

      const alive = () => nodes.filter((n) => n.host !== undefined && n.host.child.exitCode === null && n.host.child.signalCode === null)
      /** Posts to whichever live host listens for `web` (the same idempotency key on every try). */
      const post = (place: string, key: string, text: string) =>
        Effect.runPromise(eventually(async () => {
          for (const node of alive()) {
            try {
              const res = await fetch(`http://127.0.0.1:${node.httpPort}/v1/conversations/${place}/messages`, {
                method: "POST",
                headers: { ...auth, "idempotency-key": key },
                body: JSON.stringify({ text })
              })
              if (res.status === 202) return node
            } catch {
              // not listening here (not the holder, or not yet)
            }
          }
          return undefined
        }, { label: `post ${key}`, timeout: "120 seconds" }))
      const replies = async (place: string) => {
        for (const node of alive()) {
          try {
            const res = await fetch(`http://127.0.0.1:${node.httpPort}/v1/conversations/${place}/replies?after=0`, { headers: auth })
            if (res.status === 200) return (await res.json() as { replies: Array<{ text: string; kind: string }> }).replies
          } catch {
            // not here
          }
        }
        return undefined
      }
      const places = Array.from({ length: CONVERSATIONS }, (_, i) => `room-${i}`)
      const expected = new Map<string, Array<string>>(places.map((p) => [p, []]))
      const send = async (place: string, key: string, text: string, answer = `echo: ${text}`) => {
        expected.get(place)!.push(answer)
        return post(place, key, text)
      }
      /** Every expected reply seen, or the first visible duplicate or unexpected reply (which ends the wait: a failure). */
      const allAnswered = async () => {
        for (const place of places) {
          const got = await replies(place)
          if (got === undefined) return undefined
          const texts = got.filter((r) => r.kind === "reply").map((r) => r.text)
          const want = expected.get(place)!
          const twice = texts.find((t, i) => texts.indexOf(t) !== i)
          if (twice !== undefined) return `reply '${twice}' in ${place} seen more than once: ${JSON.stringify(texts)}`
          const unexpected = texts.find((t) => !want.includes(t))
          if (unexpected !== undefined) return `unexpected reply '${unexpected}' in ${place}`
          if (want.some((w) => !texts.includes(w))) return undefined
        }
        return "all answered once"
      }
      const waitAllAnswered = async (label: string) =>
        assert.strictEqual(await Effect.runPromise(eventually(allAnswered, { label, timeout: "180 seconds" })), "all answered once")

      // Round 1: one message per conversation, all through the holder of `web`.
      for (const place of places) await send(place, `${place}-1`, `first ${place}`)
      await waitAllAnswered("round 1 answered")

      // Mid-turn: a turn that holds its reply until a file exists in its workspace.
      const holder = await send("room-0", "room-0-hold", "!hold go held in room-0", "echo: held in room-0")
      await Effect.runPromise(eventually(async () => {
        const rows = await onDb((sql) => sql<{ n: number }>`SELECT COUNT(*)::int AS n FROM turns WHERE status = 'running'`)
        return rows[0]!.n > 0 ? true : undefined
      }, { label: "the held turn running" }))
      // More work in flight as the host dies.
      const inflight = places.slice(1).map((place) => send(place, `${place}-2`, `second ${place}`))
      await Promise.all(inflight)
      const holderRow = await onDb((sql) => sql<{ runner: string }>`SELECT runner FROM cluster_connections WHERE connection = 'web'`)
      assert.strictEqual(holderRow[0]!.runner, holder.runner, "the host that took the post holds web")

      const killedAt = Date.now()
      await killHard(holder.host!)
      // Round 3, sent while the connection moves: posts retry until a survivor listens.
      const moved = await post("room-1", "room-1-3", "third room-1")
      expected.get("room-1")!.push("echo: third room-1")
      const moveMs = Date.now() - killedAt
      console.log(`cluster failover: web moved from ${holder.name} to ${moved.name} in ${moveMs} ms (kill -9 to the first accepted post)`)
      assert.notStrictEqual(moved.name, holder.name)
      for (const place of places.slice(2)) await send(place, `${place}-3`, `third ${place}`)
      // Release the held turn on the survivors (the rerun holds again in its new host's workspace).
      for (const node of alive()) {
        fs.mkdirSync(path.join(node.project.dir, "workspaces", "main"), { recursive: true })
        fs.writeFileSync(path.join(node.project.dir, "workspaces", "main", "go"), "")
      }
      await waitAllAnswered("every message answered after the kill")
      const after = await onDb((sql) => sql<{ runner: string }>`SELECT runner FROM cluster_connections WHERE connection = 'web'`)
      assert.strictEqual(after[0]!.runner, moved.runner)

      // The durable record agrees: one sent delivery per reply, every inbound message handled once.
      const dup = await onDb((sql) => sql<{ text: string; n: number }>`
        SELECT text, COUNT(*)::int AS n FROM deliveries WHERE kind = 'reply' GROUP BY conversation_id, text HAVING COUNT(*) > 1`)
      assert.deepStrictEqual(dup, [], "no reply recorded twice")
      const unhandled = await onDb((sql) => sql<{ n: number }>`SELECT COUNT(*)::int AS n FROM messages WHERE direction = 'in' AND handled_by IS NULL`)
      assert.strictEqual(unhandled[0]!.n, 0)

      // The dead runner's shards all went to the survivors.
      await Effect.runPromise(eventually(async () => {
        const rows = await onDb((sql) => sql<{ address: string; n: number }>`SELECT address, COUNT(*)::int AS n FROM cluster_locks GROUP BY address`)
        return rows.length === 2 && rows.reduce((sum, r) => sum + r.n, 0) === 30 && rows.every((r) => r.address !== holder.runner) ? rows : undefined
      }, { label: "30 shards locked by the 2 survivors", timeout: "60 seconds" }))
      // `pynchy send` on a host that does not hold `cli`: that host wakes the holder through the
      // cluster (the connection's entity), and the holder runs the turn.
      const cliHolder = await Effect.runPromise(eventually(async () => {
        const rows = await onDb((sql) => sql<{ runner: string }>`SELECT runner FROM cluster_connections WHERE connection = 'cli'`)
        return rows[0] !== undefined && alive().some((n) => n.runner === rows[0]!.runner) ? rows[0].runner : undefined
      }, { label: "cli held by a survivor" }))
      const other = alive().find((n) => n.runner !== cliHolder)!
      const sent = await other.project.cli(["send", "-c", "cli:forwarded", "sent on another host"])
      assert.strictEqual(sent.code, 0, sent.stderr)
      await Effect.runPromise(eventually(async () => {
        const rows = await onDb((sql) => sql<{ status: string }>`SELECT t.status FROM messages m JOIN turns t ON t.id = m.handled_by WHERE m.conversation_id = 'cli:forwarded'`)
        return rows.length === 1 && rows[0]!.status === "completed" ? true : undefined
      }, { label: "the message sent on a non-holder answered by the holder of cli" }))

      // Any host's status shows the runners, the holder of each connection and the shard counts.
      const status = await moved.project.cli(["status"])
      assert.include(status.stdout, `cluster   connection web on ${moved.runner} since`, status.stderr)
      const shardsOf = (runner: string) => Number(new RegExp(`cluster   runner ${runner}: live, (\\d+) shards`).exec(status.stdout)?.[1] ?? -1)
      const survivors = alive()
      assert.strictEqual(survivors.length, 2)
      assert.strictEqual(survivors.reduce((sum, n) => sum + shardsOf(n.runner), 0), 30, status.stdout)
      assert.include(status.stdout, `cluster   runner ${holder.runner}: GONE`)
      // Doctor reaches the live runners from here.
      const doctor = await moved.project.cli(["doctor"])
      assert.match(doctor.stdout, /ok +cluster +2 live runner\(s\) reachable/, doctor.stdout)
    } finally {
      for (const node of nodes) if (node.host !== undefined) await stopHost(node.host)
    }
  }, 600_000)
})
