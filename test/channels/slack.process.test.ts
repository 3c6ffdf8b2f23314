/**
 * The real host (`pynchy start`, the built bundle) with a Slack connection in Socket Mode against
 * the fake Slack: a DM answered through a real sandboxed turn (the scripted core), `pynchy status`
 * and `pynchy doctor`, a kill -9 mid-turn, and a host that was down getting the events Slack held
 * for it (the fake, like Slack's retries, delivers what found no connection to the next one).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as path from "node:path"
import { afterAll, beforeAll } from "vitest"
import { eventually } from "../support/eventually.js"
import { type FakeSlack, startFakeSlack } from "../support/slack.js"
import { awaitAllSent, hostProject, killAllHosts, killHard, query, startHost, stopHost } from "./host-process.js"

let slack: FakeSlack
beforeAll(async () => {
  slack = await startFakeSlack()
})
afterAll(async () => {
  killAllHosts()
  await slack.stop()
})

/** The host's folder and pynchy.yaml (dataDir is the folder). */
const projectOf = () =>
  hostProject({
    yaml: () => [
      "workspaces: [{ id: main, agentCore: scripted }]",
      "routes: [{ connection: sl, place: '*', workspace: main }]",
      `connections: { sl: { kind: slack, botTokenEnv: SLACK_BOT_TOKEN, appTokenEnv: SLACK_APP_TOKEN, apiUrl: '${slack.apiUrl}', maxBackoffMs: 500 } }`,
      "limits: { retryBaseMs: 10, runtimeReadyTimeoutMs: 20000 }"
    ]
  })

const tokens = () => ({ SLACK_BOT_TOKEN: slack.botToken, SLACK_APP_TOKEN: slack.appToken })
const start = (dir: string) => startHost(dir, tokens())
const repliesTo = (channel: string, text: string) => slack.posted(channel).filter((p) => p.text === `echo: ${text}`).length
const awaitReply = (channel: string, text: string) =>
  Effect.runPromise(eventually(() => (repliesTo(channel, text) > 0 ? true : undefined), { label: `the reply to '${text}'` }))

describe("Slack host process against the fake Slack", () => {
  it("a DM is answered through a sandboxed turn; status shows the connection ready with its cursor", async () => {
    const { dir, cli } = projectOf()
    const host = await start(dir)
    try {
      slack.say({ channel: "D7001", text: "hello from slack" })
      await awaitReply("D7001", "hello from slack")
      const status = await Effect.runPromise(eventually(async () => {
        const r = await cli(["status"])
        return /^runtime +sl \(slack\): ready/m.test(r.stdout) ? r.stdout : undefined
      }, { label: "status showing the runtime ready" }))
      assert.match(status, /^cursor +sl\/events at \{"D7001":"\d+\.\d+"\} \(last event \d{4}-/m)
    } finally {
      await stopHost(host)
    }
  })

  it("pynchy doctor probes auth.test and apps.connections.open, and names a missing token", async () => {
    const { cli } = projectOf()
    const good = await cli(["doctor"], { env: { ...tokens() } })
    assert.match(good.stdout, /^ok +slack +sl: http:\/\/127\.0\.0\.1:\d+\/api\/ answers as <@UBOT0001> in Fake Team \(Socket Mode\)$/m)
    const missing = await cli(["doctor"], { env: { SLACK_BOT_TOKEN: slack.botToken } })
    assert.match(missing.stdout, /^fail +slack +connections\.sl\.appTokenEnv: SLACK_APP_TOKEN is not set/m)
    assert.strictEqual(missing.code, 1)
    const refused = await cli(["doctor"], { env: { SLACK_BOT_TOKEN: "xoxb-wrong", SLACK_APP_TOKEN: slack.appToken } })
    assert.match(refused.stdout, /^fail +slack +connections\.sl: slack auth\.test failed \(invalid_auth\).*the bot token is refused/m)
    assert.notInclude(good.stdout + good.stderr + refused.stdout, slack.botToken)
  })

  it("killed with kill -9 mid-turn, each message gets exactly one visible reply (or an unknown delivery and a notice)", async () => {
    const { dir } = projectOf()
    const db = path.join(dir, "pynchy.db")
    const texts: Array<string> = []
    for (let attempt = 0; attempt < 10; attempt++) {
      const host = await start(dir)
      const text = `slow one ${attempt}`
      texts.push(text)
      slack.say({ channel: "D7002", text })
      await Effect.runPromise(eventually(() => (query(db, "SELECT COUNT(*) AS n FROM turns WHERE status = 'running'")[0]!.n === 1 ? true : undefined), { label: "a running turn" }))
      await killHard(host)
      const running = query(db, "SELECT COUNT(*) AS n FROM turns WHERE status = 'running'")[0]!.n
      const sent = query(db, "SELECT COUNT(*) AS n FROM deliveries WHERE status = 'sent' AND text = ?", `echo: ${text}`)[0]!.n
      if (running === 1 && sent === 0) break
    }
    assert.strictEqual(query(db, "SELECT COUNT(*) AS n FROM turns WHERE status = 'running'")[0]!.n, 1, "no kill landed mid-turn")

    const second = await start(dir)
    try {
      slack.say({ channel: "D7002", text: "sentinel" })
      await awaitReply("D7002", "sentinel")
      await Effect.runPromise(eventually(() => (query(db, "SELECT COUNT(*) AS n FROM deliveries WHERE status = 'pending'")[0]!.n === 0 ? true : undefined), { label: "every delivery settled" }))
      for (const t of [...texts, "sentinel"]) {
        const unknown = query(db, "SELECT COUNT(*) AS n FROM deliveries WHERE status = 'unknown' AND text = ?", `echo: ${t}`)[0]!.n
        if (unknown === 1) {
          assert.isAtMost(repliesTo("D7002", t), 1, t)
          assert.isTrue(slack.posted("D7002").some((p) => p.text.includes("it may be missing here")), "the notice")
        } else {
          assert.strictEqual(repliesTo("D7002", t), 1, t)
        }
      }
      assert.strictEqual(query(db, "SELECT COUNT(*) AS n FROM receipts WHERE connection = 'sl'")[0]!.n, texts.length + 1)
    } finally {
      await stopHost(second)
    }
  })

  it("a host that was down gets the events Slack held for it when it connects again, each answered once", async () => {
    const { dir } = projectOf()
    const db = path.join(dir, "pynchy.db")
    let host = await start(dir)
    slack.say({ channel: "D7003", text: "first" })
    await awaitReply("D7003", "first")
    await stopHost(host)
    const texts = Array.from({ length: 30 }, (_, i) => `offline ${i}`)
    for (const t of texts) slack.say({ channel: "D7003", text: t })
    host = await start(dir)
    try {
      await Effect.runPromise(eventually(() => (texts.every((t) => repliesTo("D7003", t) >= 1) ? true : undefined), { label: "a reply to every message sent while the host was down" }))
      for (const t of ["first", ...texts]) assert.strictEqual(repliesTo("D7003", t), 1, t)
      await awaitAllSent(db)
    } finally {
      await stopHost(host)
    }
  })
})
