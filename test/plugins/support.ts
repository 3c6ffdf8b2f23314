import { ConfigProvider, Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { HostConfig } from "../../src/config/HostConfig.js"
import { PynchyConfig } from "../../src/config/schema.js"
import type { BuiltinPlugin } from "../../src/builtins/list.js"
import { PluginRegistry } from "../../src/plugins/PluginRegistry.js"
import { tempDir } from "../support/db.js"

export const EXAMPLE = path.resolve(import.meta.dirname, "../../examples/plugin-hello")

/** A temp project folder with its own package.json (a host root for discovery). */
export const tempProject = () => {
  const dir = tempDir("pynchy-plugins-")
  fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ name: "tmp-project", version: "1.0.0", private: true }))
  return dir
}

/** Writes `<root>/node_modules/<name>` with a package.json and the given module files. */
export const writePackage = (root: string, name: string, manifest: Record<string, unknown>, files: Record<string, string> = {}) => {
  const dir = path.join(root, "node_modules", name)
  fs.mkdirSync(dir, { recursive: true })
  fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ name, version: "1.2.3", type: "module", ...manifest }))
  for (const [file, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true })
    fs.writeFileSync(path.join(dir, file), text)
  }
  return dir
}

/** A plugin module's source: `export default { name, ...body }` (body is JS object-literal text). */
export const pluginModule = (name: string, body = "") => `export default { name: ${JSON.stringify(name)}, ${body} }\n`

/** A folder with a SKILL.md. */
export const skillFolder = (parent: string, name: string, frontmatter?: string) => {
  const dir = path.join(parent, name)
  fs.mkdirSync(dir, { recursive: true })
  fs.writeFileSync(path.join(dir, "SKILL.md"), `${frontmatter !== undefined ? `---\n${frontmatter}\n---\n` : ""}# ${name}\n`)
  return dir
}

/** Env for `Config` (so the developer's shell never leaks in). */
export const withEnv = (env: Record<string, string> = {}) => Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))

export const hostConfig = (config: Partial<ConstructorParameters<typeof PynchyConfig>[0]> = {}) =>
  HostConfig.layerFrom(PynchyConfig.make(config))

/** Runs discovery + validation at `root`, returning registry and faults. */
export const inspectAt = (
  root: string,
  options: { config?: Parameters<typeof hostConfig>[0]; env?: Record<string, string>; builtins?: ReadonlyArray<BuiltinPlugin> } = {}
) =>
  PluginRegistry.inspect({ root, builtins: options.builtins ?? [] }).pipe(
    withEnv(options.env),
    Effect.provide(hostConfig(options.config) as Layer.Layer<HostConfig>)
  )
