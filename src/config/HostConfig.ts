import { Config, Context, Effect, Either, Layer, Option, Redacted, Schema } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { Problem } from "../domain/errors.js"
import { problemLine } from "../domain/problems.js"
import { type Inspected, inspectRaw, parseYaml } from "./inspect.js"
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

  /** The config file with every problem it has (HostConfig.inspect). */
  export interface Inspected {
    /** The file read (or that PYNCHY_CONFIG names), whether or not it exists. */
    readonly file: string
    readonly loaded: Option.Option<Service>
    readonly problems: ReadonlyArray<Problem>
    readonly omitted: ReadonlyArray<string>
  }
}

/** Decodes a parsed YAML value; returns the config or every problem found. */
export const decodeConfig = (raw: unknown, file: string): Either.Either<PynchyConfig, ConfigInvalid> => {
  const { config, problems } = inspectRaw(raw)
  return problems.length > 0 || Option.isNone(config) ? Either.left(new ConfigInvalid({ file, problems })) : Either.right(config.value)
}

/** Reads a YAML file: the config and every problem of it (syntax with line and column, schema, cross-field rules). */
export const inspectConfigFile = (file: string): Inspected => {
  let text: string
  try {
    text = fs.readFileSync(file, "utf8")
  } catch (e) {
    return { config: Option.none(), problems: [Problem.make({ path: "", reason: `cannot read: ${(e as Error).message}` })], omitted: [] }
  }
  return Either.match(parseYaml(text), {
    onLeft: (problems) => ({ config: Option.none(), problems, omitted: [] }),
    onRight: inspectRaw
  })
}

/** Reads and decodes a YAML file, failing with every problem. */
export const readConfigFile = (file: string): Effect.Effect<PynchyConfig, ConfigInvalid> =>
  Effect.suspend(() => {
    const { config, problems } = inspectConfigFile(file)
    return problems.length > 0 || Option.isNone(config) ? Effect.fail(new ConfigInvalid({ file, problems })) : Effect.succeed(config.value)
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
  /**
   * `PYNCHY_CONFIG` or `./pynchy.yaml` (a missing file means the embedded defaults) with every
   * problem it has; `loaded` is the config as start would run it, or its decodable rest when the
   * file has problems (`config check` runs its later checks on that).
   */
  static readonly inspect = Effect.gen(function* () {
    const explicit = Option.filter(yield* Config.option(Config.string("PYNCHY_CONFIG")), (s) => s.trim() !== "")
    const file = path.resolve(Option.getOrElse(explicit, () => "pynchy.yaml"))
    const exists = fs.existsSync(file)
    if (!exists && Option.isSome(explicit)) {
      return { file, loaded: Option.none(), problems: [Problem.make({ path: "", reason: "PYNCHY_CONFIG names a file that does not exist" })], omitted: [] } satisfies HostConfig.Inspected
    }
    const read: Inspected = exists ? inspectConfigFile(file) : { config: Option.some(PynchyConfig.make({})), problems: [], omitted: [] }
    if (Option.isNone(read.config)) return { file, loaded: Option.none(), problems: read.problems, omitted: read.omitted } satisfies HostConfig.Inspected
    const fromFile = read.config.value
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
    const loaded = resolve(config, exists ? Option.some(file) : Option.none(), base, yield* envDatabaseUrl(env.databaseUrl))
    return { file, loaded: Option.some(loaded), problems: read.problems, omitted: read.omitted } satisfies HostConfig.Inspected
  })

  /** The config start runs; any problem of the file fails it, naming them all. */
  static readonly load = Effect.flatMap(HostConfig.inspect, ({ file, loaded, problems }) =>
    problems.length > 0 || Option.isNone(loaded) ? Effect.fail(new ConfigInvalid({ file, problems })) : Effect.succeed(loaded.value))

  static readonly layer = Layer.effect(HostConfig, HostConfig.load)

  /** A fixed config, for tests and library hosts. */
  static readonly layerFrom = (config: PynchyConfig, base: string = process.cwd()) =>
    Layer.succeed(HostConfig, resolve(config, Option.none(), base))
}
