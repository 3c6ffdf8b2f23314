/**
 * A Telegram message in to the bot's reply, against the telegram-test-api emulator (with the
 * test front: offset, long-poll), p50 over sequential round trips: the user sends, and the clock
 * stops when the emulator stores the bot's answer. Baseline: a bare grammy bot (long polling,
 * `ctx.reply`) on the same emulator, measured before and after the host in the same run; the
 * difference is the host's share (runtime, durable ingest, turn, delivery row and part claim, send).
 */
import { Effect, Either, Exit, Layer, Scope } from "effect"
import { Bot } from "grammy"
import { makeTestHost } from "../../layers/test.js"
import { decodeTelegramSettings } from "../../src/channels/telegram/settings.js"
import { makeTelegramRuntime } from "../../src/channels/telegram/TelegramRuntime.js"
import { decodeConfig } from "../../src/config/HostConfig.js"
import { tempDir } from "../../test/support/db.js"
import { startTelegram, type Telegram } from "../../test/support/telegram.js"
import { median } from "./stats.js"
import type { Row } from "./types.js"
import * as fs from "node:fs"
import * as path from "node:path"

const WARMUP = 5
const ROUNDS = 40

/** Sequential round trips in one chat: `<label> <i>` sent, timed until the bot's `echo: <label> <i>` is stored. */
const roundTrips = async (tg: Telegram, chatId: number, label: string) => {
  const user = tg.user({ chatId })
  const times: Array<number> = []
  for (let i = 0; i < WARMUP + ROUNDS; i++) {
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
    const t0 = performance.now()
    await user.say(text)
    await seen
    if (i >= WARMUP) times.push(performance.now() - t0)
  }
  return median(times)
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
    const rawBefore = await bareBot(tg, 9001, "raw a")

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
    const scope = Effect.runSync(Scope.make())
    await Effect.runPromise(Layer.buildWithScope(makeTestHost(config, { databaseFile: path.join(dir, "pynchy.db"), runtimes: [{ plugin: "telegram", value: runtime }] }), scope))
    let hostP50: number
    try {
      hostP50 = await roundTrips(tg, 9002, "host")
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
    // The box drifts: the lower of the two baseline runs is the floor.
    const rawP50 = Math.min(rawBefore, await bareBot(tg, 9003, "raw b"))
    return [
      { name: "telegram message in → reply stored by the emulator, p50 (scripted core)", value: hostP50, unit: "ms", baseline: { name: "bare grammy bot, same emulator", value: rawP50 } },
      { name: "host's share of the round trip (difference of p50s)", value: Math.max(0, hostP50 - rawP50), unit: "ms" }
    ]
  } finally {
    await tg.stop()
  }
}
