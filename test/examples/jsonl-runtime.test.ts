import { assert, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import { pathToFileURL } from "node:url"
import * as path from "node:path"
import { count, JSONL_EXAMPLE, jsonLines, jsonlProject, killHard, sleep, startHost, statusJson, stopGently, until, withDb } from "./support.js"

/**
 * examples/connection-runtime-jsonl against the real CLI host (scripted executor: `echo: <text>`),
 * real files, real SIGKILL. Nothing here asserts on time; waits poll the db and files.
 */

interface OutLine {
  readonly key: string
  readonly place: string
  readonly text: string
}

const line = (id: string, place: string, text: string) => JSON.stringify({ id, place, sender: "tester", text }) + "\n"

describe("examples/connection-runtime-jsonl: the plugin module", () => {
  const load = async () => ((await import(pathToFileURL(path.join(JSONL_EXAMPLE, "plugin.js")).href)) as { default: any }).default

  it("one runtime per jsonl connection with an enabled route; bad settings name the field", async () => {
    const plugin = await load()
    assert.strictEqual(JSON.parse(fs.readFileSync(path.join(JSONL_EXAMPLE, "package.json"), "utf8")).pynchy.plugin, "./plugin.js")
    const config = {
      dataDir: "/tmp",
      routes: [
        { connection: "a", place: "*", workspace: "main", enabled: true },
        { connection: "b", place: "*", workspace: "main", enabled: false },
        { connection: "c", place: "*", workspace: "main", enabled: true }
      ],
      connections: { a: { kind: "jsonl", file: "a.jsonl" }, b: { kind: "jsonl", file: "b.jsonl" }, c: { kind: "recording", file: "c" }, d: { kind: "jsonl", file: "d.jsonl" } }
    }
    const runtimes = plugin.connectionRuntime({ config, connectionConfig: (n: string) => (config.connections as any)[n] })
    assert.deepStrictEqual(runtimes.map((r: { name: string }) => r.name), ["a"])
    assert.isFalse(runtimes[0].isReady())
    const bad = { ...config, connections: { a: { kind: "jsonl", file: "" } } }
    assert.throws(() => plugin.connectionRuntime({ config: bad, connectionConfig: () => undefined }), /connections\.a\.file/)
  })
})

describe("examples/connection-runtime-jsonl: a real host", () => {
  it("replies to inbox lines into the outbox; status shows the runtime ready, and isReady is live", { timeout: 180_000 }, async () => {
    const p = jsonlProject({ limits: "{ readinessCheckMs: 100 }" })
    const host = await startHost(p.config)
    try {
      const runtimes = (await statusJson(p.config)).live?.sections.runtimes ?? []
      assert.deepStrictEqual(runtimes.map((r) => [r.name, r.plugin, r.ready]), [["inbox", "connection-runtime-jsonl", true]])

      fs.appendFileSync(p.inbox, line("a1", "room-1", "hello") + "not json at all\n" + line("a2", "room-2", "wörld"))
      // A torn last line: nothing happens until its newline arrives.
      const torn = line("a3", "room-1", "third")
      fs.appendFileSync(p.inbox, torn.slice(0, 20))
      const two = await until("two replies", () => {
        const { lines } = jsonLines<OutLine>(p.outbox)
        return lines.length >= 2 ? lines : undefined
      })
      assert.deepStrictEqual(two.map((l) => [l.place, l.text]).sort(), [["room-1", "echo: hello"], ["room-2", "echo: wörld"]])
      // The same id again (a provider resend): deduplicated by its receipt, no second reply.
      fs.appendFileSync(p.inbox, torn.slice(20) + line("a1", "room-1", "hello again"))
      const three = await until("three replies", () => {
        const { lines } = jsonLines<OutLine>(p.outbox)
        return lines.length >= 3 ? lines : undefined
      })
      assert.deepStrictEqual(three.map((l) => l.text).sort(), ["echo: hello", "echo: third", "echo: wörld"])
      assert.isTrue(host.stderr().includes("skipped the line at byte"))
      assert.isFalse(host.stderr().includes("not json at all"))

      // The inbox cannot be read: the runtime says so, and the host publishes it; then it recovers.
      const aside = `${p.inbox}.aside`
      fs.renameSync(p.inbox, aside)
      await until("runtime reported not ready", async () => ((await statusJson(p.config)).live?.sections.runtimes?.[0]?.ready === false ? true : undefined))
      fs.renameSync(aside, p.inbox)
      await until("runtime ready again", async () => ((await statusJson(p.config)).live?.sections.runtimes?.[0]?.ready === true ? true : undefined))
      withDb(p.db, (db) => {
        assert.strictEqual(count(db, "SELECT COUNT(*) AS n FROM events WHERE type = 'runtime.unready'"), 1)
      })
    } finally {
      assert.strictEqual(await stopGently(host), 0)
    }
    const { lines, bad } = jsonLines<OutLine>(p.outbox)
    assert.strictEqual(bad, 0)
    assert.deepStrictEqual(lines.map((l) => l.text).sort(), ["echo: hello", "echo: third", "echo: wörld"])
    withDb(p.db, (db) => {
      assert.strictEqual(count(db, "SELECT COUNT(*) AS n FROM receipts WHERE connection = 'inbox'"), 3)
      assert.strictEqual(count(db, "SELECT COUNT(*) AS n FROM messages WHERE direction = 'in'"), 3)
      assert.strictEqual(db.prepare("SELECT position FROM cursors WHERE connection = 'inbox' AND stream = 'inbox'").get()!.position, String(fs.statSync(p.inbox).size))
    })
  })

  it("kill -9 mid-file, again and again: every line ingested once, answered once, one outbox reply each", { timeout: 600_000 }, async () => {
    const TOTAL = 200
    const KILLS = 7
    // Each kill interrupts turns; the default of 3 attempts would fail a turn killed three times.
    const p = jsonlProject({ limits: "{ maxTurnAttempts: 1000, retryBaseMs: 10 }" })
    let seed = 20261129
    const random = () => (seed = (seed * 1664525 + 1013904223) % 4294967296) / 4294967296
    const written: Array<{ id: string; text: string }> = []
    let tornTail = ""
    // A burst of up to 20 lines (plus, now and then, a malformed one); its last line is torn: the
    // rest of it is written with the next burst.
    const burst = () => {
      let chunk = tornTail
      tornTail = ""
      const n = Math.min(20, TOTAL - written.length)
      for (let i = 0; i < n; i++) {
        const k = written.length
        const entry = { id: `line-${k}`, text: `message ${k}` }
        written.push(entry)
        const l = line(entry.id, `place-${k % 7}`, entry.text)
        if (i === n - 1 && written.length < TOTAL) {
          const cut = 1 + Math.floor(random() * (l.length - 2))
          chunk += l.slice(0, cut)
          tornTail = l.slice(cut)
        } else {
          chunk += l
          if (k % 37 === 5) chunk += "{\"id\": 42, \"broken\n"
        }
      }
      fs.appendFileSync(p.inbox, chunk)
    }

    const env = { PYNCHY_SCRIPTED_DELAY_MS: "3" }
    let midWork = 0
    const ingested = () => withDb(p.db, (db) => count(db, "SELECT COUNT(*) AS n FROM receipts WHERE connection = 'inbox'")) ?? 0
    for (let k = 0; k < KILLS; k++) {
      const host = await startHost(p.config, env)
      const before = ingested()
      burst()
      if (random() < 0.5) burst()
      // Let it get some way into the file (a random number of lines), then kill it at a random point.
      const target = Math.min(written.length, before + 1 + Math.floor(random() * 30))
      await until(`${target} lines ingested`, () => (ingested() >= target ? true : undefined))
      await sleep(random() * 30)
      await killHard(host)
      const state = withDb(p.db, (db) => ({
        ingested: count(db, "SELECT COUNT(*) AS n FROM receipts WHERE connection = 'inbox'"),
        unhandled: count(db, "SELECT COUNT(*) AS n FROM messages WHERE direction = 'in' AND handled_by IS NULL"),
        pending: count(db, "SELECT COUNT(*) AS n FROM deliveries WHERE status = 'pending'")
      }))!
      if (state.ingested < written.length || state.unhandled > 0 || state.pending > 0) midWork++
      // Lines keep arriving while the host is down.
      if (k % 2 === 0) burst()
    }
    while (written.length < TOTAL) burst()
    assert.strictEqual(tornTail, "")

    const host = await startHost(p.config, env)
    try {
      await until(`all ${TOTAL} lines answered`, () =>
        withDb(p.db, (db) => {
          const ingested = count(db, "SELECT COUNT(*) AS n FROM receipts WHERE connection = 'inbox'")
          const open = count(db, `SELECT (SELECT COUNT(*) FROM messages WHERE direction = 'in' AND handled_by IS NULL) +
            (SELECT COUNT(*) FROM deliveries WHERE status = 'pending') +
            (SELECT COUNT(*) FROM turns WHERE status IN ('queued', 'running', 'interrupted')) AS n`)
          return ingested === TOTAL && open === 0 ? true : undefined
        }), 300_000)
    } finally {
      assert.strictEqual(await stopGently(host), 0)
    }

    // The kills landed while work was under way (lines not yet ingested, turns or deliveries open).
    assert.isAbove(midWork, 0)
    withDb(p.db, (db) => {
      const receipts = db.prepare(`SELECT r.provider_event_id AS id, m.text, m.handled_by AS turn, t.status
        FROM receipts r JOIN messages m ON m.id = r.message_id LEFT JOIN turns t ON t.id = m.handled_by
        WHERE r.connection = 'inbox' ORDER BY m.id`).all()
      assert.deepStrictEqual(receipts.map((r) => String(r.id)).sort(), written.map((w) => w.id).sort())
      assert.strictEqual(count(db, "SELECT COUNT(*) AS n FROM messages WHERE direction = 'in'"), TOTAL)
      for (const r of receipts) {
        assert.strictEqual(r.status, "completed", `line ${r.id} handled by turn ${r.turn}`)
        assert.strictEqual(r.text, written.find((w) => w.id === r.id)!.text)
      }
      assert.strictEqual(count(db, "SELECT COUNT(*) AS n FROM delivery_claims"), 0)
      const replies = db.prepare("SELECT text, status FROM deliveries WHERE kind = 'reply'").all()
      assert.strictEqual(replies.length, TOTAL)
      assert.deepStrictEqual([...new Set(replies.map((r) => r.status))], ["sent"])
      assert.strictEqual(db.prepare("SELECT position FROM cursors WHERE connection = 'inbox' AND stream = 'inbox'").get()!.position, String(fs.statSync(p.inbox).size))
    })
    const { lines, bad } = jsonLines<OutLine>(p.outbox)
    assert.strictEqual(bad, 0)
    assert.strictEqual(new Set(lines.map((l) => l.key)).size, lines.length, "an outbox key appears twice")
    const perText = new Map<string, number>()
    for (const l of lines) perText.set(l.text, (perText.get(l.text) ?? 0) + 1)
    const wrong = written.filter((w) => perText.get(`echo: ${w.text}`) !== 1).map((w) => `${w.id}: ${perText.get(`echo: ${w.text}`) ?? 0}`)
    assert.deepStrictEqual(wrong, [])
    assert.strictEqual(lines.length, TOTAL)
  })
})
