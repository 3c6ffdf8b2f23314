import type { BuiltinPlugin } from "../plugins/discovery.js"

export type { BuiltinPlugin }

/**
 * The static registry of built-in plugins (the host's defaults: layers/default.ts and the CLI
 * hand it to PluginRegistry). Adding one is one line: its name, a lazy `load`, and
 * the optional package it needs (when that is not installed, it is skipped and `load` never runs).
 */

export const BUILTINS: ReadonlyArray<BuiltinPlugin> = [
  { name: "core-channels", load: () => import("./core-channels.js").then((m) => m.default) },
  { name: "core-skills", load: () => import("./core-skills/plugin.js").then((m) => m.default) },
  { name: "matrix", load: () => import("../channels/matrix/plugin.js").then((m) => m.default) },
  { name: "sandbox-runtimes", load: () => import("./sandbox-runtimes.js").then((m) => m.default) },
  { name: "agent-cores", load: () => import("./agent-cores.js").then((m) => m.default) },
  { name: "http", load: () => import("../channels/http/plugin.js").then((m) => m.default) },
  { name: "telegram", requires: "grammy", load: () => import("../channels/telegram/plugin.js").then((m) => m.default) },
  { name: "discord", requires: "discord.js", load: () => import("../channels/discord/plugin.js").then((m) => m.default) },
  { name: "speech", load: () => import("./speech.js").then((m) => m.default) },
  { name: "tunnels", load: () => import("./tunnels.js").then((m) => m.default) },
  { name: "slack", requires: "@slack/bolt", load: () => import("../channels/slack/plugin.js").then((m) => m.default) }
]
