/**
 * First-party plugins that are optional: each is kept in its own folder under `plugins/` with its
 * own package.json and lockfile, so the root `npm ci` does not pull their dependencies (Claude
 * Code's native binary is about 450 MB). Installed with one command, they are then discovered like
 * any installed plugin; not installed, they are skipped with that command as the hint.
 */
import * as fs from "node:fs"
import * as path from "node:path"

export interface OptionalPlugin {
  readonly name: string
  /** Its folder, relative to the host's package root. */
  readonly folder: string
  /** The agent cores it contributes (so a workspace selecting one is told how to install it). */
  readonly agentCores: ReadonlyArray<string>
  /** A file, relative to the folder, that exists once its dependencies are installed. */
  readonly marker: string
}

export const OPTIONAL_PLUGINS: ReadonlyArray<OptionalPlugin> = [
  { name: "claude-code", folder: "plugins/claude-code", agentCores: ["claude-code"], marker: "node_modules/@anthropic-ai/claude-agent-sdk/package.json" }
]

/** The one command that installs it, run from the host's package root. */
export const installCommand = (p: OptionalPlugin): string => `npm ci --prefix ${p.folder}`

export const isInstalled = (root: string, p: OptionalPlugin): boolean => fs.existsSync(path.join(root, p.folder, p.marker))

/** The optional plugin that contributes an agent core of this name, if one does. */
export const optionalPluginOfCore = (core: string): OptionalPlugin | undefined => OPTIONAL_PLUGINS.find((p) => p.agentCores.includes(core))

/** What a workspace selecting a core of a plugin that is not installed is told. */
export const notInstalledReason = (core: string, p: OptionalPlugin): string =>
  `agent core '${core}' comes from the optional plugin ${p.folder}, which is not installed: run \`${installCommand(p)}\` in the pynchy folder, then restart`
