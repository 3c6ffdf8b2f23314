/**
 * The real host (`pynchy start`, the built bundle) with a Discord connection against the fake
 * gateway and REST API: a message answered through a real sandboxed turn (the scripted core),
 * `pynchy status` and `pynchy doctor`, and a kill -9 mid-turn.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as path from "node:path"
import { afterAll, beforeAll } from "vitest"
import { type FakeDiscord, startDiscord } from "../support/discord.js"
import { eventually } from "../support/eventually.js"
import { hostProject, killAllHosts, killHard, query, startHost, stopHost } from "./host-process.js"

let dc: FakeDiscord
beforeAll(async () => {
  dc = await startDiscord()
})
afterAll(async () => {
  killAllHosts()
  await dc.stop()
})

const ada = { id: "800000000000000011", username: "ada" }

/** The host's folder and pynchy.yaml (dataDir is the folder). */
const projectOf = () =>
  hostProject({
    yaml: () => [
      "workspaces: [{ id: main, agentCore: scripted }]",
      "routes: [{ connection: dc, place: '*', workspace: main }]",
      `connections: { dc: { kind: discord, tokenEnv: DISCORD_BOT_TOKEN, apiRoot: '${dc.apiRoot}' } }`,
      "limits: { retryBaseMs: 10, runtimeReadyTimeoutMs: 20000 }"
    ]
  })

const start = (dir: string) => startHost(dir, { DISCORD_BOT_TOKEN: dc.token })
const repliesTo = (channelId: string, text: string) => dc.sent(channelId).filter((t) => t === `echo: ${text}`).length
const awaitReply = (channelId: string, text: string) =>
  Effect.runPromise(eventually(() => (repliesTo(channelId, text) > 0 ? true : undefined), { label: `the reply to '${text}'` }))

describe("Discord host process against the fake gateway", () => {
  it("a direct message is answered through a sandboxed turn; status shows the runtime ready and its cursor", async () => {
    const { dir, cli } = projectOf()
    const host = await start(dir)
    try {
      dc.say({ channelId: "510000000000000001", author: ada, content: "hello from discord" })
      await awaitReply("510000000000000001", "hello from discord")
      const status = await Effect.runPromise(eventually(async () => {
        const r = await cli(["status"])
        return /^runtime +dc \(discord\): ready/m.test(r.stdout) ? r.stdout : undefined
      }, { label: "status showing the runtime ready" }))
      assert.match(status, /^cursor +dc\/messages at \{"510000000000000001":"\d+"\}/m)
    } finally {
      await stopHost(host)
    }
  })

  it("pynchy doctor probes the connection with GET /users/@me, and names the missing token", async () => {
    const { cli } = projectOf()
    const good = await cli(["doctor"], { env: { DISCORD_BOT_TOKEN: dc.token } })
    assert.match(good.stdout, /^ok +discord +dc: http:\/\/127\.0\.0\.1:\d+\/api answers as @pynchy$/m)
    const wrong = await cli(["doctor"], { env: { DISCORD_BOT_TOKEN: "not-the-token" } })
    assert.match(wrong.stdout, /^fail +discord +connections\.dc: discord users\/@me failed \(401.*reset it in the Developer Portal/m)
    const missing = await cli(["doctor"])
    assert.match(missing.stdout, /^fail +discord +connections\.dc\.tokenEnv: DISCORD_BOT_TOKEN is not set/m)
    assert.strictEqual(missing.code, 1)
    assert.notInclude(good.stdout + good.stderr + wrong.stdout + wrong.stderr, dc.token)
  })

  it("killed with kill -9 mid-turn, each message gets exactly one visible reply (or an unknown delivery and a notice)", async () => {
    const { dir } = projectOf()
    const db = path.join(dir, "pynchy.db")
    const place = "510000000000000002"
    const texts: Array<string> = []
    for (let attempt = 0; attempt < 10; attempt++) {
      const host = await start(dir)
      const text = `slow one ${attempt}`
      texts.push(text)
      dc.say({ channelId: place, author: ada, content: text })
      await Effect.runPromise(eventually(() => (query(db, "SELECT COUNT(*) AS n FROM turns WHERE status = 'running'")[0]!.n === 1 ? true : undefined), { label: "a running turn" }))
      await killHard(host)
      const running = query(db, "SELECT COUNT(*) AS n FROM turns WHERE status = 'running'")[0]!.n
      const sent = query(db, "SELECT COUNT(*) AS n FROM deliveries WHERE status = 'sent' AND text = ?", `echo: ${text}`)[0]!.n
      if (running === 1 && sent === 0) break
    }
    assert.strictEqual(query(db, "SELECT COUNT(*) AS n FROM turns WHERE status = 'running'")[0]!.n, 1, "no kill landed mid-turn")

    const second = await start(dir)
    try {
      dc.say({ channelId: place, author: ada, content: "sentinel" })
      await awaitReply(place, "sentinel")
      await Effect.runPromise(eventually(() => (query(db, "SELECT COUNT(*) AS n FROM deliveries WHERE status = 'pending'")[0]!.n === 0 ? true : undefined), { label: "every delivery settled" }))
      for (const t of [...texts, "sentinel"]) {
        const unknown = query(db, "SELECT COUNT(*) AS n FROM deliveries WHERE status = 'unknown' AND text = ?", `echo: ${t}`)[0]!.n
        if (unknown === 1) {
          assert.isAtMost(repliesTo(place, t), 1, t)
          assert.isTrue(dc.sent(place).some((s) => s.includes("it may be missing here")), "the notice")
        } else {
          assert.strictEqual(repliesTo(place, t), 1, t)
        }
      }
      const receipts = query(db, "SELECT COUNT(*) AS n FROM receipts WHERE connection = 'dc'")[0]!.n
      assert.strictEqual(receipts, texts.length + 1)
    } finally {
      await stopHost(second)
    }
  })
})
