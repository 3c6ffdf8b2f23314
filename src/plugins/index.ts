/** What plugin authors and host code import. */
export * from "./contract.js"
export type { SkillFolder } from "./contributions.js"
export { PluginContributionsInvalid, PluginFault, type PluginSource, SkippedPlugin, sourceLabel } from "./errors.js"
export { PluginRegistry } from "./PluginRegistry.js"
export { buildRegistry, type Candidate, type Contribution, type LoadedPlugin, type Registry } from "./registry.js"
