/**
 * `pynchy doctor` for `kind: telegram` connections: the settings decode, the token is there
 * (its environment variable set, or its file readable), and the Bot API answers getMe with it
 * within a deadline. Then getWebhookInfo: in webhook mode, whether the webhook is registered at
 * `webhook.url` (the secret must be readable too), its pending updates and Telegram's last
 * delivery error; in polling mode, a webhook still set is named (the host deletes it when it
 * starts). Never prints the token or the secret.
 */
import { Duration, Effect } from "effect"
import type { PynchyConfig } from "../../config/schema.js"
import { connectionsOfKind } from "../../plugins/connections.js"
import { decodeTelegramSettings, type TelegramSettings } from "./settings.js"
import * as TelegramApi from "./TelegramApi.js"
import { readToken, TelegramRuntimeError } from "./TelegramRuntime.js"
import { readSecret } from "./webhook.js"

export interface ConnectionCheck {
  readonly verdict: "ok" | "warn" | "fail"
  readonly name: string
  readonly detail: string
  readonly fix?: string
}

const PROBE_TIMEOUT = Duration.seconds(10)

const within = <A>(operation: string, call: Effect.Effect<A, TelegramApi.TelegramApiError>) =>
  call.pipe(Effect.timeoutFail({ duration: PROBE_TIMEOUT, onTimeout: () => new TelegramApi.TelegramApiError({ operation, description: `${operation}_timeout: no answer within 10 s` }) }))

const isoTime = (unixSeconds: number | undefined) => (unixSeconds === undefined ? "" : ` at ${new Date(unixSeconds * 1000).toISOString()}`)

/** What getWebhookInfo says, for the mode the connection is in. */
const webhookState = (settings: TelegramSettings, info: TelegramApi.WebhookInfo): { readonly verdict: "ok" | "warn"; readonly detail: string; readonly fix?: string } => {
  const hook = settings.mode === "webhook" ? settings.webhook : undefined
  if (hook === undefined) {
    return info.url === ""
      ? { verdict: "ok", detail: "polling" }
      : { verdict: "ok", detail: `polling; a webhook is set (${info.url}, ${info.pendingUpdateCount} pending): the host deletes it when it starts, keeping the pending updates` }
  }
  if (info.url !== hook.url) {
    return {
      verdict: "warn",
      detail: `webhook not registered (Telegram has ${info.url === "" ? "none" : info.url}; ${info.pendingUpdateCount} pending)`,
      fix: "the host registers webhook.url when it starts; if it runs, see its log for the setWebhook error"
    }
  }
  const failing = info.lastErrorMessage !== undefined && info.pendingUpdateCount > 0
  return {
    verdict: failing ? "warn" : "ok",
    detail: `webhook ${hook.url} registered, ${info.pendingUpdateCount} pending` +
      (info.lastErrorMessage !== undefined ? `; last delivery error${isoTime(info.lastErrorDate)}: ${info.lastErrorMessage}` : ""),
    ...(failing ? { fix: `check that the host runs and that the reverse proxy passes ${hook.url} to ${hook.listen.host}:${hook.listen.port} with the X-Telegram-Bot-Api-Secret-Token header` } : {})
  }
}

const probe = (name: string, settings: TelegramSettings, dataDir: string): Effect.Effect<ConnectionCheck> =>
  Effect.gen(function* () {
    const token = yield* readToken(name, settings, dataDir)
    if (settings.mode === "webhook" && settings.webhook !== undefined) {
      yield* readSecret(name, settings.webhook, dataDir).pipe(Effect.mapError((e) => new TelegramRuntimeError({ connection: name, operation: "secret", reason: e.reason })))
    }
    const api = yield* TelegramApi.make(token, settings.apiRoot)
    const me = yield* within("getMe", api.getMe)
    const info = yield* within("getWebhookInfo", api.getWebhookInfo)
    return { me, state: webhookState(settings, info) }
  }).pipe(
    Effect.match({
      onSuccess: ({ me, state }): ConnectionCheck => ({
        verdict: state.verdict,
        name: "telegram",
        detail: `${name}: ${settings.apiRoot} answers as @${me.username ?? me.id}; ${state.detail}`,
        ...(state.fix !== undefined ? { fix: state.fix } : {})
      }),
      onFailure: (e): ConnectionCheck => ({
        verdict: "fail",
        name: "telegram",
        detail: e._tag === "TelegramRuntimeError" ? e.reason : `connections.${name}: ${e.message}`,
        fix: e._tag === "TelegramRuntimeError"
          ? e.operation === "secret"
            ? `set ${settings.webhook?.secretTokenEnv ?? "the secret file"} to a secret of 1-256 characters A-Z, a-z, 0-9, _ or -`
            : `set ${settings.tokenEnv ?? "the token file"} to the token BotFather gave you`
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
