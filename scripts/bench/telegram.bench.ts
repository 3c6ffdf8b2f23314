/**
 * A Telegram message in to the bot's reply, against the telegram-test-api emulator (with the
 * test front: offset, long-poll), p50 over sequential round trips: the user sends, and the clock
 * stops when the emulator stores the bot's answer. Baseline: a bare grammy bot (long polling,
 * `ctx.reply`) on the same emulator, measured before and after the host in the same run; the
 * difference is the host's share (runtime, durable ingest, turn, delivery row and part claim, send).
 * The same host then runs with 50 ms between messages, and that run is broken down by stage
 * from the host's own spans, wall time against CPU (channel-stages.ts; README, Session 9).
 */
import { Effect, Either, Exit, Layer, Scope } from "effect"
import { Bot } from "grammy"
import { makeTestHost } from "../../layers/test.js"
import { decodeTelegramSettings } from "../../src/channels/telegram/settings.js"
import { makeTelegramRuntime } from "../../src/channels/telegram/TelegramRuntime.js"
import { decodeConfig } from "../../src/config/HostConfig.js"
import { tempDir } from "../../test/support/db.js"
import { startTelegram, type Telegram } from "../../test/support/telegram.js"
import { channelRows, loadNow, pipelineAlone, type Rounds, runRounds, spanRecorder, SPACED_MS } from "./channel-stages.js"
import type { Row } from "./types.js"
import * as fs from "node:fs"
import * as path from "node:path"

const WARMUP = 5
const ROUNDS = 40

/** Sequential round trips in one chat: `<label> <i>` sent, timed until the bot's `echo: <label> <i>` is stored. */
const roundTrips = (tg: Telegram, chatId: number, label: string, options?: { readonly tick?: () => void; readonly gapMs?: number }) => {
  const user = tg.user({ chatId })
  return runRounds(WARMUP, ROUNDS, async (i) => {
    const text = `${label} ${i}`
    const seen = new Promise<void>((resolve) => {
      const check = () => {
        if (tg.sent(chatId).includes(`echo: ${text}`)) {
          tg.server.off("AddedBotMessage", check)
          resolve()
        }
      }
      tg.server.on("AddedBotMessage", check)
    })
    const sent = performance.now()
    await user.say(text)
    await seen
    return { sent, received: tg.callTimes("sendMessage").at(-1)!.at, seen: performance.now() }
  }, options)
}

const bareBot = async (tg: Telegram, chatId: number, label: string) => {
  const bot = new Bot(tg.token, { client: { apiRoot: tg.apiRoot } })
  bot.on("message:text", (ctx) => ctx.reply(`echo: ${ctx.message.text}`).then(() => undefined))
  const started = new Promise<void>((resolve) => void bot.start({ timeout: 30, onStart: () => resolve() }))
  await started
  try {
    return await roundTrips(tg, chatId, label)
  } finally {
    await bot.stop()
  }
}

export default async function (): Promise<Array<Row>> {
  const tg = await startTelegram()
  try {
    const bareBefore = await bareBot(tg, 9001, "raw a")

    const dir = tempDir()
    fs.writeFileSync(path.join(dir, "tg.token"), tg.token, { mode: 0o600 })
    const config = Either.getOrThrow(decodeConfig({
      dataDir: dir,
      workspaces: [{ id: "main" }],
      routes: [{ connection: "tg", place: "*", workspace: "main" }],
      connections: {}
    }, "bench"))
    const runtime = makeTelegramRuntime({
      name: "tg",
      settings: decodeTelegramSettings("tg", { kind: "telegram", tokenFile: "tg.token", apiRoot: tg.apiRoot }),
      dataDir: dir
    })
    const recorder = spanRecorder()
    const scope = Effect.runSync(Scope.make())
    await Effect.runPromise(Layer.buildWithScope(Layer.provide(makeTestHost(config, { databaseFile: path.join(dir, "pynchy.db"), runtimes: [{ plugin: "telegram", value: runtime }] }), recorder.layer), scope))
    const load = loadNow()
    let host: Rounds
    let spaced: Rounds
    try {
      host = await roundTrips(tg, 9002, "host")
      spaced = await roundTrips(tg, 9002, "spaced", { tick: recorder.tick, gapMs: SPACED_MS })
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
    // The box drifts: the bare bot runs before and after the host, and the lower p50 is the floor.
    const bareAfter = await bareBot(tg, 9003, "raw b")
    return channelRows({
      what: "telegram message in → reply stored by the emulator",
      bare: "bare grammy bot, same emulator",
      host,
      spaced,
      alone: await pipelineAlone(WARMUP, ROUNDS, SPACED_MS),
      bareRuns: [bareBefore, bareAfter],
      recorder,
      load
    })
  } finally {
    await tg.stop()
  }
}
