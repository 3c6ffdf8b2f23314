/**
 * A Discord message in to the bot's reply, against the project's fake gateway and REST API
 * (test/support/discord.ts), p50 over sequential round trips: the user's message is dispatched,
 * and the clock stops when the fake stores the bot's answer. Baseline: a bare discord.js bot (the
 * same Client options, a raw MESSAGE_CREATE answered with one REST post) on the same fake,
 * measured before and after the host in the same run; the difference is the host's share
 * (runtime queue, durable ingest, turn, delivery row and part claim, send).
 * The same host then runs with 50 ms between messages, and that run is broken down by stage
 * from the host's own spans, wall time against CPU (channel-stages.ts; README, Session 9).
 */
import { Client, Events, GatewayIntentBits } from "discord.js"
import { Effect, Either, Exit, Layer, Scope } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { makeTestHost } from "../../layers/test.js"
import { makeDiscordRuntime } from "../../src/channels/discord/DiscordRuntime.js"
import { decodeDiscordSettings } from "../../src/channels/discord/settings.js"
import { decodeConfig } from "../../src/config/HostConfig.js"
import { tempDir } from "../../test/support/db.js"
import { type FakeDiscord, startDiscord } from "../../test/support/discord.js"
import { channelRows, loadNow, pipelineAlone, type Rounds, runRounds, spanRecorder, SPACED_MS } from "./channel-stages.js"
import type { Row } from "./types.js"

const WARMUP = 5
const ROUNDS = 40
const user = { id: "800000000000000077", username: "bench" }

/** Sequential round trips in one channel: `<label> <i>` said, timed until the bot's `echo: <label> <i>` is stored. */
const roundTrips = (dc: FakeDiscord, channelId: string, label: string, options?: { readonly tick?: () => void; readonly gapMs?: number }) =>
  runRounds(WARMUP, ROUNDS, async (i) => {
    const text = `${label} ${i}`
    let stop!: () => void
    const seen = new Promise<void>((resolve) => {
      stop = dc.onPosted((m) => {
        if (m.channel_id === channelId && m.content === `echo: ${text}`) resolve()
      })
    })
    const sent = performance.now()
    dc.say({ channelId, author: user, content: text })
    await seen
    stop()
    return { sent, received: dc.postTimes().at(-1)!.at, seen: performance.now() }
  }, options)

const bareBot = async (dc: FakeDiscord, channelId: string, label: string) => {
  const client = new Client({
    intents: [GatewayIntentBits.Guilds, GatewayIntentBits.GuildMessages, GatewayIntentBits.DirectMessages, GatewayIntentBits.MessageContent],
    rest: { api: dc.apiRoot },
    waitGuildTimeout: 0
  })
  client.on(Events.Raw, (packet: { t?: string; d?: { channel_id: string; content: string; author: { bot?: boolean } } }) => {
    if (packet.t !== "MESSAGE_CREATE" || packet.d!.author.bot === true) return
    void client.rest.post(`/channels/${packet.d!.channel_id}/messages`, { body: { content: `echo: ${packet.d!.content}` } })
  })
  await client.login(dc.token)
  try {
    return await roundTrips(dc, channelId, label)
  } finally {
    await client.destroy()
  }
}

export default async function (): Promise<Array<Row>> {
  const dc = await startDiscord()
  try {
    const bareBefore = await bareBot(dc, "520000000000000001", "raw a")

    const dir = tempDir()
    fs.writeFileSync(path.join(dir, "dc.token"), dc.token, { mode: 0o600 })
    const config = Either.getOrThrow(decodeConfig({
      dataDir: dir,
      workspaces: [{ id: "main" }],
      routes: [{ connection: "dc", place: "*", workspace: "main" }],
      connections: {}
    }, "bench"))
    const runtime = makeDiscordRuntime({
      name: "dc",
      settings: decodeDiscordSettings("dc", { kind: "discord", tokenFile: "dc.token", apiRoot: dc.apiRoot }),
      dataDir: dir
    })
    const recorder = spanRecorder()
    const scope = Effect.runSync(Scope.make())
    await Effect.runPromise(Layer.buildWithScope(Layer.provide(makeTestHost(config, { databaseFile: path.join(dir, "pynchy.db"), runtimes: [{ plugin: "discord", value: runtime }] }), recorder.layer), scope))
    const load = loadNow()
    let host: Rounds
    let spaced: Rounds
    try {
      host = await roundTrips(dc, "520000000000000002", "host")
      spaced = await roundTrips(dc, "520000000000000002", "spaced", { tick: recorder.tick, gapMs: SPACED_MS })
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
    // The box drifts: the bare bot runs before and after the host, and the lower p50 is the floor.
    const bareAfter = await bareBot(dc, "520000000000000003", "raw b")
    return channelRows({
      what: "discord message in → reply stored by the fake",
      bare: "bare discord.js bot, same fake",
      host,
      spaced,
      alone: await pipelineAlone(WARMUP, ROUNDS, SPACED_MS),
      bareRuns: [bareBefore, bareAfter],
      recorder,
      load
    })
  } finally {
    await dc.stop()
  }
}
