/**
 * A Slack message in to the app's reply, against the project's fake Slack (Socket Mode
 * WebSocket + Web API, test/support/slack.ts), p50 over sequential round trips: the fake sends
 * the event envelope, and the clock stops when chat.postMessage with the reply reaches it.
 * Baseline: a bare bolt app in Socket Mode (`app.message` → `say`) on the same fake, measured
 * before and after the host in the same run; the difference is the host's share (runtime,
 * durable ingest before the ack, turn, delivery row and part claim, send).
 */
import { App, LogLevel } from "@slack/bolt"
import { Effect, Either, Exit, Layer, Scope } from "effect"
import * as path from "node:path"
import { makeTestHost } from "../../layers/test.js"
import { decodeSlackSettings } from "../../src/channels/slack/settings.js"
import { makeSlackRuntime } from "../../src/channels/slack/SlackRuntime.js"
import { decodeConfig } from "../../src/config/HostConfig.js"
import { tempDir } from "../../test/support/db.js"
import { type FakeSlack, startFakeSlack } from "../../test/support/slack.js"
import { median } from "./stats.js"
import type { Row } from "./types.js"

const WARMUP = 5
const ROUNDS = 40

/** Sequential round trips in one DM: `<label> <i>` sent, timed until `echo: <label> <i>` is posted. */
const roundTrips = async (slack: FakeSlack, channel: string, label: string) => {
  const times: Array<number> = []
  for (let i = 0; i < WARMUP + ROUNDS; i++) {
    const text = `${label} ${i}`
    const seen = slack.awaitPost(channel, `echo: ${text}`)
    const t0 = performance.now()
    slack.say({ channel, text })
    await seen
    if (i >= WARMUP) times.push(performance.now() - t0)
  }
  return median(times)
}

const bareApp = async (slack: FakeSlack, channel: string, label: string) => {
  const clientOptions = { slackApiUrl: slack.apiUrl }
  const app = new App({ token: slack.botToken, appToken: slack.appToken, socketMode: true, clientOptions, installerOptions: { clientOptions }, logLevel: LogLevel.ERROR })
  app.message(async ({ message, say }) => {
    if ("text" in message && typeof message.text === "string") await say(`echo: ${message.text}`)
  })
  await app.start()
  try {
    return await roundTrips(slack, channel, label)
  } finally {
    await app.stop()
  }
}

export default async function (): Promise<Array<Row>> {
  const slack = await startFakeSlack()
  process.env["PYNCHY_BENCH_SLACK_BOT"] = slack.botToken
  process.env["PYNCHY_BENCH_SLACK_APP"] = slack.appToken
  try {
    const rawBefore = await bareApp(slack, "D9001", "raw a")
    const dir = tempDir()
    const config = Either.getOrThrow(decodeConfig({
      dataDir: dir,
      workspaces: [{ id: "main" }],
      routes: [{ connection: "sl", place: "*", workspace: "main" }],
      connections: {}
    }, "bench"))
    const runtime = makeSlackRuntime({
      name: "sl",
      settings: decodeSlackSettings("sl", { kind: "slack", botTokenEnv: "PYNCHY_BENCH_SLACK_BOT", appTokenEnv: "PYNCHY_BENCH_SLACK_APP", apiUrl: slack.apiUrl })
    })
    const scope = Effect.runSync(Scope.make())
    await Effect.runPromise(Layer.buildWithScope(makeTestHost(config, { databaseFile: path.join(dir, "pynchy.db"), runtimes: [{ plugin: "slack", value: runtime }] }), scope))
    let hostP50: number
    try {
      hostP50 = await roundTrips(slack, "D9002", "host")
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
    // The box drifts: the lower of the two baseline runs is the floor.
    const rawP50 = Math.min(rawBefore, await bareApp(slack, "D9003", "raw b"))
    return [
      { name: "slack message in → reply posted to the fake Web API, p50 (scripted core)", value: hostP50, unit: "ms", baseline: { name: "bare bolt app in Socket Mode, same fake", value: rawP50 } },
      { name: "host's share of the round trip (difference of p50s)", value: Math.max(0, hostP50 - rawP50), unit: "ms" }
    ]
  } finally {
    await slack.stop()
  }
}
