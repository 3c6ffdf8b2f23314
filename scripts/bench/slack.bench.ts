/**
 * A Slack message in to the app's reply, against the project's fake Slack (Socket Mode
 * WebSocket + Web API, test/support/slack.ts), p50 over sequential round trips: the fake sends
 * the event envelope, and the clock stops when chat.postMessage with the reply reaches it.
 * Baseline: a bare bolt app in Socket Mode (`app.message` → `say`) on the same fake, measured
 * before and after the host in the same run; the difference is the host's share (runtime,
 * durable ingest before the ack, turn, delivery row and part claim, send).
 * The same host then runs with 50 ms between messages, and that run is broken down by stage
 * from the host's own spans, wall time against CPU (channel-stages.ts; README, Session 9).
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
import { channelRows, loadNow, pipelineAlone, type Rounds, runRounds, spanRecorder, SPACED_MS } from "./channel-stages.js"
import type { Row } from "./types.js"

const WARMUP = 5
const ROUNDS = 40

/** Sequential round trips in one DM: `<label> <i>` sent, timed until `echo: <label> <i>` is posted. */
const roundTrips = (slack: FakeSlack, channel: string, label: string, options?: { readonly tick?: () => void; readonly gapMs?: number }) =>
  runRounds(WARMUP, ROUNDS, async (i) => {
    const text = `${label} ${i}`
    const seen = slack.awaitPost(channel, `echo: ${text}`)
    const sent = performance.now()
    slack.say({ channel, text })
    await seen
    return { sent, received: slack.callTimes("chat.postMessage").at(-1)!.at, seen: performance.now() }
  }, options)

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
    const bareBefore = await bareApp(slack, "D9001", "raw a")
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
    const recorder = spanRecorder()
    const scope = Effect.runSync(Scope.make())
    await Effect.runPromise(Layer.buildWithScope(Layer.provide(makeTestHost(config, { databaseFile: path.join(dir, "pynchy.db"), runtimes: [{ plugin: "slack", value: runtime }] }), recorder.layer), scope))
    const load = loadNow()
    let host: Rounds
    let spaced: Rounds
    try {
      host = await roundTrips(slack, "D9002", "host")
      spaced = await roundTrips(slack, "D9002", "spaced", { tick: recorder.tick, gapMs: SPACED_MS })
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
    // The box drifts: the bare app runs before and after the host, and the lower p50 is the floor.
    const bareAfter = await bareApp(slack, "D9003", "raw b")
    return channelRows({
      what: "slack message in → reply posted to the fake Web API",
      bare: "bare bolt app in Socket Mode, same fake",
      host,
      spaced,
      alone: await pipelineAlone(WARMUP, ROUNDS, SPACED_MS),
      bareRuns: [bareBefore, bareAfter],
      recorder,
      load
    })
  } finally {
    await slack.stop()
  }
}
