import { Schema } from "effect"

/** Where a plugin came from. */
export const PluginSource = Schema.Union(
  Schema.TaggedStruct("builtin", {}),
  Schema.TaggedStruct("package", { name: Schema.String, version: Schema.String, path: Schema.String }),
  Schema.TaggedStruct("module", { specifier: Schema.String, path: Schema.String })
)
export type PluginSource = typeof PluginSource.Type

export const sourceLabel = (source: PluginSource): string =>
  source._tag === "builtin" ? "builtin" : source._tag === "package" ? `package ${source.name}@${source.version}` : `module ${source.path}`

/**
 * What went wrong, as the user sees it: `invalid_plugin` (the export is not a plugin),
 * `load_failed` (import threw), `hook_failed` (a hook threw or rejected), `hook_timeout`,
 * `invalid_contribution` (it failed its Schema), `duplicate_name` (a name already taken in the
 * category), `duplicate_plugin` (two plugins share a name), `hook_not_supported` (a valid
 * contribution to a hook nothing in this host uses yet: refused, not ignored).
 */
export const FaultCode = Schema.Literal(
  "invalid_plugin",
  "load_failed",
  "hook_failed",
  "hook_timeout",
  "invalid_contribution",
  "duplicate_name",
  "duplicate_plugin",
  "hook_not_supported"
)
export type FaultCode = typeof FaultCode.Type

/** One problem with one plugin: `hook` is a hook name, or `plugin`/`load` for the plugin itself. */
export class PluginFault extends Schema.Class<PluginFault>("PluginFault")({
  plugin: Schema.String,
  hook: Schema.String,
  code: FaultCode,
  problem: Schema.String
}) {}

/** A plugin that was not loaded, and why (optional package missing, disabled in config). */
export class SkippedPlugin extends Schema.Class<SkippedPlugin>("SkippedPlugin")({
  name: Schema.String,
  source: PluginSource,
  reason: Schema.String,
  /** What to do about it, e.g. `npm install @slack/bolt`. */
  hint: Schema.optional(Schema.String)
}) {}

/** Startup refuses the plugin set; every fault found is listed, not the first. */
export class PluginContributionsInvalid extends Schema.TaggedError<PluginContributionsInvalid>()("PluginContributionsInvalid", {
  faults: Schema.Array(PluginFault)
}) {
  override get message() {
    return `${this.faults.length} plugin problem(s)\n` +
      this.faults.map((f) => `  - plugin '${f.plugin}', ${f.hook}: ${f.code}: ${f.problem}`).join("\n")
  }
}
