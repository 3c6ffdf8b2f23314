/**
 * The static registry of built-in plugins. Adding one is one line: its name, a lazy `load`, and
 * the optional package it needs (when that is not installed, it is skipped and `load` never runs).
 */
export interface BuiltinPlugin {
  readonly name: string
  /** An optional npm package the plugin needs; missing means skipped with an install hint. */
  readonly requires?: string
  /** Imports the plugin's module and returns its plugin object. */
  readonly load: () => Promise<unknown>
}

export const BUILTINS: ReadonlyArray<BuiltinPlugin> = [
  { name: "core-channels", load: () => import("./builtin/core-channels.js").then((m) => m.default) },
  { name: "core-skills", load: () => import("./builtin/core-skills/plugin.js").then((m) => m.default) },
  { name: "matrix", load: () => import("../channels/matrix/plugin.js").then((m) => m.default) },
  { name: "sandbox-runtimes", load: () => import("./builtin/sandbox-runtimes.js").then((m) => m.default) },
  { name: "agent-cores", load: () => import("./builtin/agent-cores.js").then((m) => m.default) },
  { name: "http", load: () => import("../channels/http/plugin.js").then((m) => m.default) },
  { name: "telegram", requires: "grammy", load: () => import("../channels/telegram/plugin.js").then((m) => m.default) },
  { name: "tunnels", load: () => import("./builtin/tunnels.js").then((m) => m.default) },
  { name: "slack", requires: "@slack/bolt", load: () => import("./builtin/slack.js").then((m) => m.default) }
]
