import { Config, Context, Effect, Either, Layer, Option, Redacted, Schema } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { parseDocument } from "yaml"
import { Problem } from "../domain/errors.js"
import { problemLine, problemsOf } from "../domain/problems.js"
import { scheduleProblems } from "./schedules.js"
import { PostgresUrl } from "./database.js"
import { providersFromEnv } from "./env-providers.js"
import { Limits, PynchyConfig } from "./schema.js"

/** The config could not be read or is wrong; every problem is listed with its path. */
export class ConfigInvalid extends Schema.TaggedError<ConfigInvalid>()("ConfigInvalid", {
  file: Schema.String,
  problems: Schema.Array(Problem)
}) {
  override get message() {
    return `${this.file}: ${this.problems.length} problem(s)\n` +
      this.problems.map((p) => `  - ${problemLine(p)}`).join("\n")
  }
}

export declare namespace HostConfig {
  export interface Service {
    readonly config: PynchyConfig
    /** The file it came from, or none when the embedded defaults are used. */
    readonly file: Option.Option<string>
    /** Absolute data dir. */
    readonly dataDir: string
    /** Absolute path of the host database (SQLite, when no `databaseUrl`). */
    readonly databaseFile: string
    /** Postgres: `PYNCHY_DATABASE_URL`, else `database.url`; none means the SQLite file. */
    readonly databaseUrl: Option.Option<Redacted.Redacted>
  }
}

/** Cross-field rules Schema cannot see: unique ids (routes name workspaces plugins may bring: src/plugins/workspaces.ts checks them). */
const semanticProblems = (config: PynchyConfig): Array<Problem> => {
  const problems: Array<Problem> = []
  const ids = new Set<string>()
  config.workspaces.forEach((w, i) => {
    if (ids.has(w.id)) problems.push(Problem.make({ path: `workspaces.${i}.id`, reason: `duplicate workspace id '${w.id}'` }))
    ids.add(w.id)
  })
  const places = new Set<string>()
  config.routes.forEach((r, i) => {
    const key = `${r.connection}\u0000${r.place}`
    if (places.has(key)) problems.push(Problem.make({ path: `routes.${i}`, reason: `duplicate route for connection '${r.connection}' place '${r.place}'` }))
    places.add(key)
  })
  const names = new Set<string>()
  config.providers.forEach((p, i) => {
    if (names.has(p.name)) problems.push(Problem.make({ path: `providers.${i}.name`, reason: `duplicate provider name '${p.name}'` }))
    names.add(p.name)
  })
  problems.push(...scheduleProblems(config))
  if (config.ui !== undefined && config.ui.tokens.length === 0 && config.ui.tokensFile === undefined) {
    problems.push(Problem.make({ path: "ui.tokens", reason: "give at least one token hash (tokens or tokensFile) to log in to the Control UI" }))
  }
  return problems
}

/** Decodes a parsed YAML value; returns the config or every problem found. */
export const decodeConfig = (raw: unknown, file: string): Either.Either<PynchyConfig, ConfigInvalid> => {
  const decoded = Schema.decodeUnknownEither(PynchyConfig)(raw ?? {}, { errors: "all", onExcessProperty: "error" })
  if (Either.isLeft(decoded)) return Either.left(new ConfigInvalid({ file, problems: problemsOf(decoded.left) }))
  const problems = semanticProblems(decoded.right)
  return problems.length > 0 ? Either.left(new ConfigInvalid({ file, problems })) : Either.right(decoded.right)
}

/** Reads and decodes a YAML file; YAML syntax errors are listed with their line and column. */
export const readConfigFile = (file: string): Effect.Effect<PynchyConfig, ConfigInvalid> =>
  Effect.gen(function* () {
    const text = yield* Effect.try({
      try: () => fs.readFileSync(file, "utf8"),
      catch: (e) => new ConfigInvalid({ file, problems: [Problem.make({ path: "", reason: `cannot read: ${(e as Error).message}` })] })
    })
    const doc = parseDocument(text, { prettyErrors: true })
    if (doc.errors.length > 0) {
      return yield* new ConfigInvalid({
        file,
        problems: doc.errors.map((e) =>
          Problem.make({ path: e.linePos ? `line ${e.linePos[0].line}:${e.linePos[0].col}` : "", reason: e.message.split("\n")[0] ?? e.code })
        )
      })
    }
    return yield* decodeConfig(doc.toJS(), file)
  })

/** Env overrides (Effect Config): they win over the file. */
const overrides = Config.all({
  dataDir: Config.option(Config.string("PYNCHY_DATA_DIR")),
  maxConcurrentTurns: Config.option(Config.integer("PYNCHY_MAX_CONCURRENT_TURNS")),
  containerRuntime: Config.option(Config.string("PYNCHY_CONTAINER_RUNTIME")),
  databaseUrl: Config.option(Config.redacted("PYNCHY_DATABASE_URL"))
})

const resolve = (config: PynchyConfig, file: Option.Option<string>, base: string, envUrl: Option.Option<Redacted.Redacted> = Option.none()): HostConfig.Service => {
  const dataDir = path.resolve(base, config.dataDir)
  const databaseUrl = Option.orElse(envUrl, () => Option.map(Option.fromNullable(config.database.url), Redacted.make))
  return { config, file, dataDir, databaseFile: path.join(dataDir, "pynchy.db"), databaseUrl }
}

/** `PYNCHY_DATABASE_URL`, checked like `database.url` (an empty one is unset). */
const envDatabaseUrl = (value: Option.Option<Redacted.Redacted>) => {
  const url = Option.filter(value, (u) => Redacted.value(u).trim() !== "")
  if (Option.isNone(url) || Schema.is(PostgresUrl)(Redacted.value(url.value))) return Effect.succeed(url)
  return Effect.fail(new ConfigInvalid({
    file: "PYNCHY_DATABASE_URL",
    problems: [Problem.make({ path: "PYNCHY_DATABASE_URL", reason: "a postgres:// or postgresql:// URL (the value is not shown: it may hold a password)" })]
  }))
}

export class HostConfig extends Context.Tag("pynchy/HostConfig")<HostConfig, HostConfig.Service>() {
  /** `PYNCHY_CONFIG` or `./pynchy.yaml`; a missing file means the embedded defaults. */
  static readonly load = Effect.gen(function* () {
    const explicit = Option.filter(yield* Config.option(Config.string("PYNCHY_CONFIG")), (s) => s.trim() !== "")
    const file = path.resolve(Option.getOrElse(explicit, () => "pynchy.yaml"))
    const exists = fs.existsSync(file)
    if (!exists && Option.isSome(explicit)) {
      return yield* new ConfigInvalid({ file, problems: [Problem.make({ path: "", reason: "PYNCHY_CONFIG names a file that does not exist" })] })
    }
    const fromFile = exists ? yield* readConfigFile(file) : PynchyConfig.make({})
    const env = yield* overrides
    // No providers configured: an OPENAI_API_KEY / ANTHROPIC_API_KEY in the environment is one.
    const providers = fromFile.providers.length > 0 ? fromFile.providers : yield* providersFromEnv
    const config = PynchyConfig.make({
      ...fromFile,
      providers,
      dataDir: Option.getOrElse(env.dataDir, () => fromFile.dataDir),
      containerRuntime: Option.getOrElse(env.containerRuntime, () => fromFile.containerRuntime),
      limits: Option.match(env.maxConcurrentTurns, {
        onNone: () => fromFile.limits,
        onSome: (n) => Limits.make({ ...fromFile.limits, maxConcurrentTurns: n })
      })
    })
    const base = Option.isSome(env.dataDir) || !exists ? process.cwd() : path.dirname(file)
    return resolve(config, exists ? Option.some(file) : Option.none(), base, yield* envDatabaseUrl(env.databaseUrl))
  })

  static readonly layer = Layer.effect(HostConfig, HostConfig.load)

  /** A fixed config, for tests and library hosts. */
  static readonly layerFrom = (config: PynchyConfig, base: string = process.cwd()) =>
    Layer.succeed(HostConfig, resolve(config, Option.none(), base))
}
