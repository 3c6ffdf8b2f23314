/**
 * The real host (`pynchy start`, the built bundle) with a Telegram connection against the
 * emulator: a message answered through a real sandboxed turn (the scripted core), a kill -9
 * mid-turn, and a host that was down catching up from its durable offset. In webhook mode:
 * `pynchy doctor` on the registration, and a kill -9 while the emulator's front posts a burst of
 * updates (one request cut off before its answer), each message answered once after a restart.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as path from "node:path"
import { afterAll, beforeAll } from "vitest"
import { eventually } from "../support/eventually.js"
import { freePort, startTelegram, type Telegram } from "../support/telegram.js"
import { awaitAllSent, hostProject, killAllHosts, killHard, query, startHost, stopHost } from "./host-process.js"

let tg: Telegram
beforeAll(async () => {
  tg = await startTelegram()
})
afterAll(async () => {
  killAllHosts()
  await tg.stop()
})


/** The host's folder and pynchy.yaml (dataDir is the folder). */
const projectOf = (webhookPort?: number) =>
  hostProject({
    yaml: () => [
      "workspaces: [{ id: main, agentCore: scripted }]",
      "routes: [{ connection: tg, place: '*', workspace: main }]",
      `connections: { tg: { kind: telegram, tokenEnv: TG_BOT_TOKEN, apiRoot: '${tg.apiRoot}', pollTimeoutSeconds: 2, maxBackoffMs: 500` +
      (webhookPort === undefined ? "" : `, mode: webhook, webhook: { url: '${hookUrl(webhookPort)}', listen: { port: ${webhookPort} }, secretTokenEnv: TG_WEBHOOK_SECRET }`) +
      " } }",
      "limits: { retryBaseMs: 10, runtimeReadyTimeoutMs: 20000 }"
    ]
  })
const hookUrl = (port: number) => `http://127.0.0.1:${port}/telegram/tg`
const SECRET = "process-test-secret"

const start = (dir: string) => startHost(dir, { TG_BOT_TOKEN: tg.token, TG_WEBHOOK_SECRET: SECRET })
const repliesTo = (chatId: number, text: string) => tg.sent(chatId).filter((t) => t === `echo: ${text}`).length
const awaitReply = (chatId: number, text: string) =>
  Effect.runPromise(eventually(() => (repliesTo(chatId, text) > 0 ? true : undefined), { label: `the reply to '${text}'` }))

describe("Telegram host process against the emulator", () => {
  it("a direct message is answered through a sandboxed turn; status and the cursor show the connection", async () => {
    const { dir, cli } = projectOf()
    const host = await start(dir)
    try {
      const ada = tg.user({ chatId: 7001 })
      await ada.say("hello from telegram")
      await awaitReply(ada.chatId, "hello from telegram")
      const db = path.join(dir, "pynchy.db")
      const cursor = query(db, "SELECT position FROM cursors WHERE connection = 'tg' AND stream = 'updates'")[0]
      assert.isDefined(cursor)
      await Effect.runPromise(eventually(() => (query(db, "SELECT status FROM turns").map((t) => t.status).join() === "completed" ? true : undefined), { label: "the turn completed" }))
      // pynchy status: the runtime's readiness (live), its cursor and when its last event came.
      const status = await Effect.runPromise(eventually(async () => {
        const r = await cli(["status"])
        return /^runtime +tg \(telegram\): ready/m.test(r.stdout) ? r.stdout : undefined
      }, { label: "status showing the runtime ready" }))
      assert.match(status, /^cursor +tg\/updates at \d+ \(last event \d{4}-/m)
    } finally {
      await stopHost(host)
    }
  })

  it("pynchy doctor probes the connection with getMe, and names the missing token", async () => {
    const { cli } = projectOf()
    const good = await cli(["doctor"], { env: { TG_BOT_TOKEN: tg.token } })
    assert.match(good.stdout, /^ok +telegram +tg: http:\/\/127\.0\.0\.1:\d+ answers as @TestNameBot; polling$/m)
    const missing = await cli(["doctor"])
    assert.match(missing.stdout, /^fail +telegram +connections\.tg\.tokenEnv: TG_BOT_TOKEN is not set/m)
    assert.strictEqual(missing.code, 1)
    assert.notInclude(good.stdout + good.stderr, tg.token)
  })

  it("killed with kill -9 mid-turn, each message gets exactly one visible reply (or an unknown delivery and a notice)", async () => {
    const { dir } = projectOf()
    const db = path.join(dir, "pynchy.db")
    const bo = tg.user({ chatId: 7002 })
    const texts: Array<string> = []
    for (let attempt = 0; attempt < 10; attempt++) {
      const host = await start(dir)
      const text = `slow one ${attempt}`
      texts.push(text)
      await bo.say(text)
      await Effect.runPromise(eventually(() => (query(db, "SELECT COUNT(*) AS n FROM turns WHERE status = 'running'")[0]!.n === 1 ? true : undefined), { label: "a running turn" }))
      await killHard(host)
      const running = query(db, "SELECT COUNT(*) AS n FROM turns WHERE status = 'running'")[0]!.n
      const sent = query(db, "SELECT COUNT(*) AS n FROM deliveries WHERE status = 'sent' AND text = ?", `echo: ${text}`)[0]!.n
      if (running === 1 && sent === 0) break
    }
    assert.strictEqual(query(db, "SELECT COUNT(*) AS n FROM turns WHERE status = 'running'")[0]!.n, 1, "no kill landed mid-turn")

    const second = await start(dir)
    try {
      await bo.say("sentinel")
      await awaitReply(bo.chatId, "sentinel")
      await Effect.runPromise(eventually(() => (query(db, "SELECT COUNT(*) AS n FROM deliveries WHERE status = 'pending'")[0]!.n === 0 ? true : undefined), { label: "every delivery settled" }))
      for (const t of [...texts, "sentinel"]) {
        const unknown = query(db, "SELECT COUNT(*) AS n FROM deliveries WHERE status = 'unknown' AND text = ?", `echo: ${t}`)[0]!.n
        if (unknown === 1) {
          assert.isAtMost(repliesTo(bo.chatId, t), 1, t)
          assert.isTrue(tg.sent(bo.chatId).some((s) => s.includes("it may be missing here")), "the notice")
        } else {
          assert.strictEqual(repliesTo(bo.chatId, t), 1, t)
        }
      }
      const receipts = query(db, "SELECT COUNT(*) AS n FROM receipts WHERE connection = 'tg'")[0]!.n
      assert.strictEqual(receipts, texts.length + 1)
    } finally {
      await stopHost(second)
    }
  })

  it("a host that was down catches up from its offset: more than one getUpdates page, every message answered once", async () => {
    const { dir } = projectOf()
    const db = path.join(dir, "pynchy.db")
    const cy = tg.user({ chatId: 7003 })
    let host = await start(dir)
    await cy.say("first")
    await awaitReply(cy.chatId, "first")
    await stopHost(host)

    // getUpdates returns at most 100 updates: the runtime reads the backlog over several polls.
    const texts = Array.from({ length: 110 }, (_, i) => `offline ${i}`)
    for (const t of texts) await cy.say(t)
    host = await start(dir)
    try {
      await Effect.runPromise(eventually(() => (texts.every((t) => repliesTo(cy.chatId, t) >= 1) ? true : undefined), { label: "a reply to every message sent while the host was down" }))
      for (const t of ["first", ...texts]) assert.strictEqual(repliesTo(cy.chatId, t), 1, t)
      await awaitAllSent(db)
    } finally {
      await stopHost(host)
    }
  })

  it("webhook mode: pynchy doctor says whether the webhook is registered, and names a missing secret", async () => {
    const port = await freePort()
    const { dir, cli } = projectOf(port)
    const env = { TG_BOT_TOKEN: tg.token }
    const noSecret = await cli(["doctor"], { env })
    assert.match(noSecret.stdout, /^fail +telegram +connections\.tg\.webhook\.secretTokenEnv: TG_WEBHOOK_SECRET is not set/m)
    // Another test's webhook may be set: the check names what Telegram has.
    await fetch(`${tg.apiRoot}/bot${tg.token}/deleteWebhook`, { method: "POST" })
    const before = await cli(["doctor"], { env: { ...env, TG_WEBHOOK_SECRET: SECRET } })
    assert.match(before.stdout, /^warn +telegram +tg: .* answers as @TestNameBot; webhook not registered \(Telegram has none; \d+ pending\)/m)
    const host = await start(dir)
    try {
      const ok = await cli(["doctor"], { env: { ...env, TG_WEBHOOK_SECRET: SECRET } })
      assert.match(ok.stdout, new RegExp(`^ok +telegram +tg: .* answers as @TestNameBot; webhook ${hookUrl(port).replace(/[.]/g, "\\.")} registered, 0 pending`, "m"))
      assert.notInclude(ok.stdout + ok.stderr, SECRET)
    } finally {
      await stopHost(host)
    }
  })

  it("webhook mode: killed with kill -9 while updates are posted (one request cut before its answer), each message is stored once and answered once", async () => {
    const port = await freePort()
    const { dir } = projectOf(port)
    const db = path.join(dir, "pynchy.db")
    const ed = tg.user({ chatId: 7004 })
    let host = await start(dir)
    await ed.say("warm up")
    await awaitReply(ed.chatId, "warm up")
    const texts: Array<string> = []
    let cut: { updateId: number; stored: boolean } | undefined
    for (let attempt = 0; attempt < 5 && cut === undefined; attempt++) {
      const postsBefore = tg.webhookPosts().length
      const burst = Array.from({ length: 30 }, (_, i) => `burst ${attempt}.${i}`)
      texts.push(...burst)
      for (const t of burst) await ed.say(t)
      await Effect.runPromise(eventually(() => (query(db, "SELECT COUNT(*) AS n FROM messages WHERE direction = 'in' AND text LIKE ?", `burst ${attempt}.%`)[0]!.n as number >= 3 ? true : undefined), { label: "the burst arriving" }))
      await killHard(host)
      // A request the kill cut off: it reached the listener and got no answer (not refused).
      const lost = tg.webhookPosts().slice(postsBefore).find((p) => p.status === 0 && p.code !== "ECONNREFUSED")
      if (lost !== undefined) {
        const stored = query(db, "SELECT COUNT(*) AS n FROM receipts WHERE connection = 'tg' AND provider_event_id LIKE ?", `${lost.updateId}:%`)[0]!.n === 1
        cut = { updateId: lost.updateId, stored }
      }
      host = await start(dir)
    }
    try {
      assert.isDefined(cut, "no kill landed while a webhook request was in flight")
      await ed.say("sentinel")
      for (const t of [...texts, "sentinel"]) await awaitReply(ed.chatId, t)
      await Effect.runPromise(eventually(() => (query(db, "SELECT COUNT(*) AS n FROM deliveries WHERE status = 'pending'")[0]!.n === 0 ? true : undefined), { label: "every delivery settled" }))
      for (const t of ["warm up", ...texts, "sentinel"]) {
        const unknown = query(db, "SELECT COUNT(*) AS n FROM deliveries WHERE status = 'unknown' AND text = ?", `echo: ${t}`)[0]!.n
        if (unknown === 1) assert.isAtMost(repliesTo(ed.chatId, t), 1, t)
        else assert.strictEqual(repliesTo(ed.chatId, t), 1, t)
        assert.strictEqual(query(db, "SELECT COUNT(*) AS n FROM messages WHERE direction = 'in' AND text = ?", t)[0]!.n, 1, `${t} stored once`)
      }
      // The cut update was posted again after the restart and answered 2xx (a duplicate of its receipt if it had committed).
      assert.isTrue(tg.webhookPosts().some((p) => p.updateId === cut!.updateId && p.status === 200), `update ${cut!.updateId} delivered again (committed before the kill: ${cut!.stored})`)
    } finally {
      await stopHost(host)
    }
  })
})
