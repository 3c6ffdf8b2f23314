/**
 * Finding plugins: built-ins from the static registry, installed packages whose package.json has
 * a `pynchy` field, and explicit module specifiers (config `plugins.modules`, `PYNCHY_PLUGINS`).
 * Only readdir and package.json reads happen before a plugin is imported.
 */
import { Duration, Effect, Either, Schema } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { PluginFault, type PluginSource, SkippedPlugin } from "./errors.js"
import { installCommand, isInstalled, OPTIONAL_PLUGINS } from "./first-party.js"
import { installedPackageDir } from "./paths.js"
import type { Candidate } from "./registry.js"
import { importModule } from "../system/import-module.js"

/** A built-in plugin entry (the list is src/builtins/list.ts): its name, the optional package it needs, a lazy `load`. */
export interface BuiltinPlugin {
  readonly name: string
  /** An optional npm package the plugin needs; missing means skipped with an install hint. */
  readonly requires?: string
  /** Imports the plugin's module and returns its plugin object. */
  readonly load: () => Promise<unknown>
}

export interface ModuleRequest {
  /** A package name, or a path (absolute, or relative to `base`) to a module file or package folder. */
  readonly specifier: string
  readonly base: string
}

export interface DiscoveryInput {
  /** The project whose `node_modules` is scanned (the host's package folder by default). */
  readonly root: string
  readonly builtins: ReadonlyArray<BuiltinPlugin>
  readonly modules: ReadonlyArray<ModuleRequest>
  /** Plugin names (or package names) not to load. */
  readonly disabled: ReadonlyArray<string>
  /** The deadline of one module import. */
  readonly loadTimeout: Duration.DurationInput
}

export interface Discovered {
  readonly candidates: ReadonlyArray<Candidate>
  readonly skipped: ReadonlyArray<SkippedPlugin>
  readonly faults: ReadonlyArray<PluginFault>
}

const PynchyField = Schema.Struct({ plugin: Schema.NonEmptyTrimmedString })
const Manifest = Schema.Struct({
  name: Schema.String,
  version: Schema.optionalWith(Schema.String, { default: () => "0.0.0" }),
  main: Schema.optional(Schema.String),
  pynchy: Schema.optional(Schema.Unknown)
})
type Manifest = typeof Manifest.Type

const readManifest = (dir: string): Manifest | undefined => {
  try {
    const decoded = Schema.decodeUnknownEither(Manifest)(JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")))
    return Either.getOrUndefined(decoded)
  } catch {
    return undefined
  }
}

/** A plugin module to import: where, from which source, and the names that disable it. */
interface Plan {
  readonly label: string
  readonly source: PluginSource
  readonly entry: string
  readonly names: ReadonlyArray<string>
}

type Planned = Either.Either<Plan, PluginFault>

const loadFault = (plugin: string, problem: string) => PluginFault.make({ plugin, hook: "load", code: "load_failed", problem })

/** The module a plugin package points at: `pynchy.plugin`, else `main`, else index.js. */
const entryOf = (dir: string, manifest: Manifest | undefined, label: string): Either.Either<string, PluginFault> => {
  let relative = manifest?.main ?? "index.js"
  if (manifest?.pynchy !== undefined) {
    const field = Schema.decodeUnknownEither(PynchyField)(manifest.pynchy)
    if (Either.isLeft(field)) {
      return Either.left(PluginFault.make({ plugin: label, hook: "load", code: "invalid_plugin", problem: `package.json "pynchy" must be {"plugin": "<relative path of the plugin module>"}` }))
    }
    relative = field.right.plugin
  }
  const entry = path.resolve(dir, relative)
  return fs.existsSync(entry) ? Either.right(entry) : Either.left(loadFault(label, `the plugin module ${relative} does not exist in ${dir}`))
}

const packageFolders = (nodeModules: string): Array<string> => {
  const names = (dir: string) => {
    try {
      return fs.readdirSync(dir).filter((n) => !n.startsWith("."))
    } catch {
      return []
    }
  }
  return names(nodeModules).flatMap((n) =>
    n.startsWith("@") ? names(path.join(nodeModules, n)).map((m) => path.join(nodeModules, n, m)) : [path.join(nodeModules, n)]
  )
}

/** Installed packages with a `pynchy` field, by package name. */
export const scanPackages = (root: string): Array<Planned> =>
  packageFolders(path.join(root, "node_modules"))
    .flatMap((dir): Array<Planned> => {
      let text: string
      try {
        text = fs.readFileSync(path.join(dir, "package.json"), "utf8")
      } catch {
        return []
      }
      // Most packages are not plugins; skip the parse for them.
      if (!text.includes("\"pynchy\"")) return []
      const manifest = readManifest(dir)
      if (manifest?.pynchy === undefined) return []
      return [Either.map(entryOf(dir, manifest, manifest.name), (entry) => ({
        label: manifest.name,
        source: { _tag: "package", name: manifest.name, version: manifest.version, path: entry },
        entry,
        names: [manifest.name]
      }))]
    })
    .sort((a, b) => labelOfPlanned(a).localeCompare(labelOfPlanned(b)))

const labelOfPlanned = (p: Planned) => (Either.isRight(p) ? p.right.label : p.left.plugin)

const isPath = (specifier: string) => specifier.startsWith(".") || path.isAbsolute(specifier)

/** An explicit module: a file, a package folder, or an installed package's name. */
export const planModule = (request: ModuleRequest, root: string): Planned => {
  const { specifier } = request
  const located = isPath(specifier) ? path.resolve(request.base, specifier) : installedPackageDir(specifier, root)
  if (located === undefined) return Either.left(loadFault(specifier, `package '${specifier}' is not installed (npm install ${specifier})`))
  let stat: fs.Stats
  try {
    stat = fs.statSync(located)
  } catch {
    return Either.left(loadFault(specifier, `${located} does not exist`))
  }
  const entry = stat.isDirectory() ? entryOf(located, readManifest(located), specifier) : Either.right(located)
  return Either.map(entry, (file) => ({
    label: specifier,
    source: { _tag: "module", specifier, path: file },
    entry: file,
    names: isPath(specifier) ? [] : [specifier]
  }))
}

const describe = (error: unknown) => {
  const text = error instanceof Error ? error.message : String(error)
  return (text.split("\n")[0] ?? text).slice(0, 300)
}

const importPlugin = (plan: Plan, timeout: Duration.DurationInput) =>
  Effect.tryPromise({
    try: () => importModule(pathToFileURL(plan.entry).href),
    catch: (error) => loadFault(plan.label, `import failed: ${describe(error)}`)
  }).pipe(
    Effect.timeoutFail({ duration: timeout, onTimeout: () => loadFault(plan.label, `import did not finish within ${Duration.format(Duration.decode(timeout))}`) }),
    Effect.map((mod) => mod.default ?? mod.plugin)
  )

const nameOf = (plugin: unknown): string | undefined =>
  plugin !== null && typeof plugin === "object" && typeof (plugin as { name?: unknown }).name === "string" ? (plugin as { name: string }).name : undefined

const DISABLED = "disabled in config (plugins.disabled)"

export const discover = (input: DiscoveryInput): Effect.Effect<Discovered> =>
  Effect.gen(function* () {
    const disabled = new Set(input.disabled)
    const skipped: Array<SkippedPlugin> = []
    const faults: Array<PluginFault> = []
    const builtin: PluginSource = { _tag: "builtin" }

    const builtins = input.builtins.filter((b) => {
      if (disabled.has(b.name)) {
        skipped.push(SkippedPlugin.make({ name: b.name, source: builtin, reason: DISABLED }))
        return false
      }
      if (b.requires !== undefined && installedPackageDir(b.requires, input.root) === undefined) {
        skipped.push(SkippedPlugin.make({ name: b.name, source: builtin, reason: `optional package '${b.requires}' is not installed`, hint: `npm install ${b.requires}` }))
        return false
      }
      return true
    })

    // Optional first-party plugins (plugins/<name>/): loaded once installed, else skipped with the command.
    const firstParty = OPTIONAL_PLUGINS.flatMap((p): Array<Planned> => {
      const folder = path.join(input.root, p.folder)
      if (!fs.existsSync(path.join(folder, "package.json"))) return []
      if (!isInstalled(input.root, p)) {
        skipped.push(SkippedPlugin.make({ name: p.name, source: { _tag: "module", specifier: p.folder, path: folder }, reason: "its dependencies are not installed", hint: installCommand(p) }))
        return []
      }
      return [Either.map(planModule({ specifier: folder, base: input.root }, input.root), (plan) => ({ ...plan, label: p.name, names: [p.name] }))]
    })

    const seen = new Set<string>()
    const plans: Array<Plan> = []
    for (const planned of [...scanPackages(input.root), ...firstParty, ...input.modules.map((m) => planModule(m, input.root))]) {
      if (Either.isLeft(planned)) {
        faults.push(planned.left)
        continue
      }
      const plan = planned.right
      const key = fs.realpathSync(plan.entry)
      if (seen.has(key)) continue // named twice (installed and listed): load once
      seen.add(key)
      if (plan.names.some((n) => disabled.has(n))) skipped.push(SkippedPlugin.make({ name: plan.label, source: plan.source, reason: DISABLED }))
      else plans.push(plan)
    }

    const loaded = yield* Effect.all(
      [
        ...builtins.map((b) =>
          Effect.tryPromise({ try: b.load, catch: (error) => loadFault(b.name, `import failed: ${describe(error)}`) }).pipe(
            Effect.map((plugin): Candidate => ({ plugin, source: builtin }))
          )
        ),
        ...plans.map((plan) => importPlugin(plan, input.loadTimeout).pipe(Effect.map((plugin): Candidate => ({ plugin, source: plan.source }))))
      ].map(Effect.either),
      { concurrency: "unbounded" }
    )

    const candidates: Array<Candidate> = []
    for (const result of loaded) {
      if (Either.isLeft(result)) {
        faults.push(result.left)
        continue
      }
      const name = nameOf(result.right.plugin)
      if (name !== undefined && disabled.has(name) && result.right.source._tag !== "builtin") {
        skipped.push(SkippedPlugin.make({ name, source: result.right.source, reason: DISABLED }))
      } else {
        candidates.push(result.right)
      }
    }
    return { candidates, skipped, faults }
  })
