import { Config, Effect, Layer, Option } from "effect"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { AgentSessionRuntimeRegistry } from "./AgentSessionRuntimeRegistry.js"
import { importModule } from "../../system/import-module.js"

export interface LoadedModule {
  readonly specifier: string
  /** Runtime ids the module registered. */
  readonly registered: ReadonlyArray<string>
}

export interface SkippedModule {
  readonly specifier: string
  /** `module_not_found`, `import_failed`, `no_registrar`, `registrar_failed`, `registrar_timeout`. */
  readonly code: string
  readonly reason: string
}

export interface LoadReport {
  readonly loaded: ReadonlyArray<LoadedModule>
  readonly skipped: ReadonlyArray<SkippedModule>
}

/** Operator configuration: `PYNCHY_AGENT_SESSION_RUNTIME_MODULES`, or its alias `CLAWCONNECT_AGENT_SESSION_RUNTIME_MODULES`. */
export const runtimeModulesConfig = Config.string("PYNCHY_AGENT_SESSION_RUNTIME_MODULES").pipe(
  Config.orElse(() => Config.string("CLAWCONNECT_AGENT_SESSION_RUNTIME_MODULES")),
  Config.option
)

/** Comma- or newline-separated; blanks ignored. */
export const parseSpecifiers = (raw: string): Array<string> =>
  raw.split(/[,\r\n]/).map((s) => s.trim()).filter((s) => s.length > 0)

class Skip {
  constructor(readonly code: string, readonly reason: string) {}
}

const message = (e: unknown) => {
  const text = e instanceof Error ? e.message : String(e)
  return (text.split("\n")[0] ?? "").slice(0, 300)
}

const notFound = (e: unknown) => {
  const code = (e as { code?: unknown } | null)?.code
  return code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND"
}

/**
 * A path (absolute, `./`, `../`, or relative to `cwd` when such a file exists) is imported by URL;
 * anything else is a package name, resolved from this package first and then from `cwd`.
 */
const importSpecifier = (specifier: string, cwd: string): Promise<Record<string, unknown>> => {
  const asPath = path.resolve(cwd, specifier)
  const isPath = path.isAbsolute(specifier) || specifier.startsWith(".") || fs.existsSync(asPath)
  if (isPath) {
    if (!fs.existsSync(asPath)) return Promise.reject(new Skip("module_not_found", `no file at ${asPath}`))
    return importModule(pathToFileURL(asPath).href)
  }
  return importModule(specifier).catch((first: unknown) => {
    if (!notFound(first)) throw first
    let resolved: string
    try {
      resolved = createRequire(path.join(cwd, "noop.js")).resolve(specifier)
    } catch {
      throw new Skip("module_not_found", `cannot resolve package '${specifier}' from this package or from ${cwd}`)
    }
    return importModule(pathToFileURL(resolved).href)
  })
}

const registrarOf = (mod: Record<string, unknown>) => {
  if (typeof mod.registerAgentSessionRuntimes === "function") return mod.registerAgentSessionRuntimes as (r: unknown) => unknown
  if (typeof mod.default === "function") return mod.default as (r: unknown) => unknown
  return undefined
}

/**
 * Imports each named module and runs its registrar against the registry. Never fails: a module
 * that is missing, fails to import, exports no registrar, or throws while registering is logged
 * with its specifier and skipped. Without `specifiers`, reads the operator's env variable.
 */
export const loadAgentSessionRuntimes = Effect.fn("loadAgentSessionRuntimes")(
  function* (specifiers?: ReadonlyArray<string>, cwd: string = process.cwd()) {
    const registry = yield* AgentSessionRuntimeRegistry
    const names = specifiers ?? Option.match(yield* runtimeModulesConfig.pipe(Effect.orElseSucceed(() => Option.none<string>())), {
      onNone: () => [],
      onSome: parseSpecifiers
    })
    const loaded: Array<LoadedModule> = []
    const skipped: Array<SkippedModule> = []
    for (const specifier of names) {
      const before = new Set((yield* registry.runtimes).map((r) => r.id))
      const outcome = yield* Effect.tryPromise({
        try: () => importSpecifier(specifier, cwd),
        catch: (e) => (e instanceof Skip ? e : notFound(e) ? new Skip("module_not_found", message(e)) : new Skip("import_failed", message(e)))
      }).pipe(
        Effect.flatMap((mod) => {
          const registrar = registrarOf(mod)
          if (registrar === undefined) {
            return Effect.fail(new Skip("no_registrar", "exports neither registerAgentSessionRuntimes nor a default function"))
          }
          return Effect.tryPromise({
            try: async () => registrar(registry.registrar),
            catch: (e) => new Skip("registrar_failed", message(e))
          }).pipe(
            Effect.timeoutFail({
              duration: registry.callTimeoutMs,
              onTimeout: () => new Skip("registrar_timeout", `the registrar did not finish within ${registry.callTimeoutMs} ms`)
            })
          )
        }),
        Effect.either
      )
      const registered = (yield* registry.runtimes).map((r) => r.id).filter((id) => !before.has(id))
      if (outcome._tag === "Right") {
        loaded.push({ specifier, registered })
        yield* Effect.logInfo("agent-session runtime module loaded").pipe(Effect.annotateLogs({ specifier, registered: registered.join(",") || "(none)" }))
      } else {
        skipped.push({ specifier, code: outcome.left.code, reason: outcome.left.reason })
        yield* Effect.logWarning("agent-session runtime module skipped").pipe(
          Effect.annotateLogs({ specifier, code: outcome.left.code, reason: outcome.left.reason, registered: registered.join(",") || "(none)" })
        )
      }
    }
    return { loaded, skipped } satisfies LoadReport
  }
)

/** A registry filled from the operator's env variable (empty when it is unset). */
export const layerFromEnv = Layer.effectDiscard(loadAgentSessionRuntimes()).pipe(Layer.provideMerge(AgentSessionRuntimeRegistry.layer))
