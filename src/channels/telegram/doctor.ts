/**
 * `pynchy doctor` for `kind: telegram` connections: the settings decode, the token is there
 * (its environment variable set, or its file readable), and the Bot API answers getMe with it
 * within a deadline. Never prints the token.
 */
import { Duration, Effect } from "effect"
import type { PynchyConfig } from "../../config/schema.js"
import { connectionsOfKind } from "../../plugins/connections.js"
import { decodeTelegramSettings, type TelegramSettings } from "./settings.js"
import * as TelegramApi from "./TelegramApi.js"
import { readToken } from "./TelegramRuntime.js"

export interface ConnectionCheck {
  readonly verdict: "ok" | "warn" | "fail"
  readonly name: string
  readonly detail: string
  readonly fix?: string
}

const PROBE_TIMEOUT = Duration.seconds(10)

const probe = (name: string, settings: TelegramSettings, dataDir: string): Effect.Effect<ConnectionCheck> =>
  Effect.gen(function* () {
    const token = yield* readToken(name, settings, dataDir)
    const api = yield* TelegramApi.make(token, settings.apiRoot)
    return yield* api.getMe.pipe(
      Effect.timeoutFail({ duration: PROBE_TIMEOUT, onTimeout: () => new TelegramApi.TelegramApiError({ operation: "getMe", description: "getMe_timeout: no answer within 10 s" }) })
    )
  }).pipe(
    Effect.match({
      onSuccess: (me): ConnectionCheck => ({ verdict: "ok", name: "telegram", detail: `${name}: ${settings.apiRoot} answers as @${me.username ?? me.id}` }),
      onFailure: (e): ConnectionCheck => ({
        verdict: "fail",
        name: "telegram",
        detail: e._tag === "TelegramRuntimeError" ? e.reason : `connections.${name}: ${e.message}`,
        fix: e._tag === "TelegramRuntimeError"
          ? `set ${settings.tokenEnv ?? "the token file"} to the token BotFather gave you`
          : e.status === 401 || e.status === 404
          ? "the token is refused: check it with BotFather (/token)"
          : `check that ${settings.apiRoot} is reachable from this machine`
      })
    })
  )

export const telegramChecks = (config: PynchyConfig, dataDir: string): Effect.Effect<ReadonlyArray<ConnectionCheck>> =>
  Effect.forEach(connectionsOfKind(config, "telegram"), ({ name, raw, routed }) => {
    let settings: TelegramSettings
    try {
      settings = decodeTelegramSettings(name, raw)
    } catch (e) {
      return Effect.succeed<ConnectionCheck>({ verdict: "fail", name: "telegram", detail: (e as Error).message, fix: "see docs/channels.md, Telegram" })
    }
    if (!routed) return Effect.succeed<ConnectionCheck>({ verdict: "warn", name: "telegram", detail: `${name}: no enabled route uses it, so it does not run`, fix: `add a route with connection: ${name}` })
    return probe(name, settings, dataDir)
  }, { concurrency: "unbounded" })
