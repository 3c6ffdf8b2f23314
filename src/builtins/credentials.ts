/**
 * The secrets each built-in channel reads when its connection starts, by connection kind, so
 * `config check` can say an unset variable is missing before start fails on it. Settings that do
 * not decode give none here: the plugin's own check names them.
 */
import { decodeDiscordSettings, discordCredentials } from "../channels/discord/settings.js"
import { decodeSlackSettings, slackCredentials } from "../channels/slack/settings.js"
import { decodeTelegramSettings, telegramCredentials } from "../channels/telegram/settings.js"
import type { Credential } from "../channels/token.js"

const KINDS: Readonly<Record<string, (name: string, raw: unknown) => ReadonlyArray<Credential>>> = {
  telegram: (name, raw) => telegramCredentials(decodeTelegramSettings(name, raw)),
  slack: (name, raw) => slackCredentials(decodeSlackSettings(name, raw)),
  discord: (name, raw) => discordCredentials(decodeDiscordSettings(name, raw))
}

/** The credentials of connection `name`; none for a kind without any, or settings that do not decode. */
export const connectionCredentials = (name: string, raw: Readonly<Record<string, unknown>>): ReadonlyArray<Credential> => {
  const of = KINDS[String(raw.kind)]
  if (of === undefined) return []
  try {
    return of(name, raw)
  } catch {
    return []
  }
}
