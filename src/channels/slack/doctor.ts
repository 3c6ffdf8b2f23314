/**
 * `pynchy doctor` for `kind: slack` connections: the settings decode, every secret the mode needs
 * is set (bot token; app token for Socket Mode; signing secret for HTTP), and the Web API answers
 * auth.test with the bot token (and, in Socket Mode, apps.connections.open with the app token)
 * within a deadline. Never prints a token.
 */
import { Duration, Effect } from "effect"
import type { PynchyConfig } from "../../config/schema.js"
import { connectionsOfKind } from "../../plugins/connections.js"
import type { ConnectionCheck } from "../telegram/doctor.js"
import { decodeSlackSettings, type SlackSettings } from "./settings.js"
import * as SlackApi from "./SlackApi.js"
import { readSecret } from "./SlackRuntime.js"

const PROBE_TIMEOUT = Duration.seconds(10)
const timeoutFor = (operation: string) => () => new SlackApi.SlackApiError({ operation, error: `${operation.replace(".", "_")}_timeout: no answer within 10 s` })

const probe = (name: string, settings: SlackSettings): Effect.Effect<ConnectionCheck> =>
  Effect.gen(function* () {
    const bolt = yield* SlackApi.loadBolt
    const botToken = yield* readSecret(name, "botTokenEnv", settings.botTokenEnv)
    if (settings.mode === "http") yield* readSecret(name, "signingSecretEnv", settings.signingSecretEnv!)
    const options = SlackApi.clientOptions(settings.apiUrl)
    const me = yield* SlackApi.webApi(new bolt.webApi.WebClient(botToken, options)).authTest.pipe(
      Effect.timeoutFail({ duration: PROBE_TIMEOUT, onTimeout: timeoutFor("auth.test") })
    )
    if (settings.mode === "socket") {
      const appToken = yield* readSecret(name, "appTokenEnv", settings.appTokenEnv!)
      const appClient = new bolt.webApi.WebClient(appToken, options)
      yield* Effect.tryPromise({ try: () => appClient.apps.connections.open(), catch: SlackApi.toSlackError("apps.connections.open") }).pipe(
        Effect.timeoutFail({ duration: PROBE_TIMEOUT, onTimeout: timeoutFor("apps.connections.open") })
      )
    }
    return me
  }).pipe(
    Effect.match({
      onSuccess: (me): ConnectionCheck => ({
        verdict: "ok",
        name: "slack",
        detail: `${name}: ${settings.apiUrl} answers as <@${me.userId}>${me.team !== undefined ? ` in ${me.team}` : ""} (${settings.mode === "socket" ? "Socket Mode" : `HTTP events on ${settings.host}:${settings.port}${settings.path}`})`
      }),
      onFailure: (e): ConnectionCheck => ({
        verdict: "fail",
        name: "slack",
        detail: e._tag === "SlackRuntimeError" ? e.reason : `connections.${name}: ${e.message}`,
        fix: e._tag === "SlackRuntimeError"
          ? "set it to the token or secret from your app's page at api.slack.com/apps (see docs/channels.md, Slack)"
          : e.error === "invalid_auth" || e.error === "not_authed" || e.error === "token_revoked"
          ? e.operation === "apps.connections.open" ? "the app-level token is refused: make one with the connections:write scope" : "the bot token is refused: reinstall the app and copy its Bot User OAuth Token"
          : e.operation.startsWith("load")
          ? "npm install @slack/bolt"
          : `check that ${settings.apiUrl} is reachable from this machine`
      })
    })
  )

export const slackChecks = (config: PynchyConfig): Effect.Effect<ReadonlyArray<ConnectionCheck>> =>
  Effect.forEach(connectionsOfKind(config, "slack"), ({ name, raw, routed }) => {
    let settings: SlackSettings
    try {
      settings = decodeSlackSettings(name, raw)
    } catch (e) {
      return Effect.succeed<ConnectionCheck>({ verdict: "fail", name: "slack", detail: (e as Error).message, fix: "see docs/channels.md, Slack" })
    }
    if (!routed) return Effect.succeed<ConnectionCheck>({ verdict: "warn", name: "slack", detail: `${name}: no enabled route uses it, so it does not run`, fix: `add a route with connection: ${name}` })
    return probe(name, settings)
  }, { concurrency: "unbounded" })
