/**
 * `pynchy doctor` for `kind: discord` connections: the settings decode, the token is there (its
 * environment variable set, or its file readable), and the REST API answers `GET /users/@me`
 * with it within a deadline. Never prints the token.
 */
import { Duration, Effect } from "effect"
import type { PynchyConfig } from "../../config/schema.js"
import { connectionsOfKind } from "../../plugins/connections.js"
import type { ConnectionCheck } from "../telegram/doctor.js"
import * as DiscordApi from "./DiscordApi.js"
import { readToken } from "./DiscordRuntime.js"
import { decodeDiscordSettings, type DiscordSettings } from "./settings.js"

const PROBE_TIMEOUT = Duration.seconds(10)

const probe = (name: string, settings: DiscordSettings, dataDir: string): Effect.Effect<ConnectionCheck> =>
  Effect.gen(function* () {
    const token = yield* readToken(name, settings, dataDir)
    const rest = yield* DiscordApi.restOf(token, settings.apiRoot)
    return yield* DiscordApi.make(rest).me.pipe(
      Effect.timeoutFail({ duration: PROBE_TIMEOUT, onTimeout: () => new DiscordApi.DiscordApiError({ operation: "users/@me", description: "me_timeout: no answer within 10 s" }) })
    )
  }).pipe(
    Effect.match({
      onSuccess: (me): ConnectionCheck => ({ verdict: "ok", name: "discord", detail: `${name}: ${settings.apiRoot} answers as @${me.username ?? me.id}` }),
      onFailure: (e): ConnectionCheck => ({
        verdict: "fail",
        name: "discord",
        detail: e._tag === "DiscordRuntimeError" ? e.reason : `connections.${name}: ${e.message}`,
        fix: e._tag === "DiscordRuntimeError"
          ? `set ${settings.tokenEnv ?? "the token file"} to the bot token of your application (Developer Portal, Bot, Reset Token)`
          : e.status === 401
          ? "the token is refused: reset it in the Developer Portal (Bot, Reset Token)"
          : `check that ${settings.apiRoot} is reachable from this machine`
      })
    })
  )

export const discordChecks = (config: PynchyConfig, dataDir: string): Effect.Effect<ReadonlyArray<ConnectionCheck>> =>
  Effect.forEach(connectionsOfKind(config, "discord"), ({ name, raw, routed }) => {
    let settings: DiscordSettings
    try {
      settings = decodeDiscordSettings(name, raw)
    } catch (e) {
      return Effect.succeed<ConnectionCheck>({ verdict: "fail", name: "discord", detail: (e as Error).message, fix: "see docs/channels.md, Discord" })
    }
    if (!routed) return Effect.succeed<ConnectionCheck>({ verdict: "warn", name: "discord", detail: `${name}: no enabled route uses it, so it does not run`, fix: `add a route with connection: ${name}` })
    return probe(name, settings, dataDir)
  }, { concurrency: "unbounded" })
