/**
 * One Schema per contribution type and the table that ties each hook to its category: how a
 * contribution is checked, what its name is, and whether the registry keeps the author's object
 * (things with methods: a decoded copy would lose `this`) or the decoded value (plain data).
 */
import { Effect, Either, Schema } from "effect"
import { ArrayFormatter } from "effect/ParseResult"
import * as fs from "node:fs"
import * as path from "node:path"
import { parse as parseYaml } from "yaml"
import { builtinCoreInfo } from "../protocol/agent-cores.js"
import { McpServerSpec } from "../domain/mcp.js"
import { Workspace } from "../domain/workspace.js"
import type { Channel } from "../contracts/channel.js"
import type { ConnectionRuntime } from "../contracts/connection-runtime.js"
import { type AnyConnectionRuntime, isNative, type NativeConnectionRuntime } from "../contracts/native-runtime.js"
import type {
  ActionSpec,
  AgentCore,
  ContainerRuntime,
  HookName,
  Observer,
  ServiceHandler,
  SpeechSynthesizer,
  Tunnel
} from "../contracts/plugin.js"

/** Presence of a function (the registry cannot check its signature, only that it is callable). */
export const Fn = Schema.declare((u: unknown): u is (...args: ReadonlyArray<any>) => unknown => typeof u === "function", {
  identifier: "Function",
  description: "a function"
})

const Name = Schema.NonEmptyTrimmedString
const Strings = Schema.Array(Schema.String)

const CoreName = Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, { message: () => "must be 1-64 letters, digits, '.', '_' or '-'" }))
const ModuleCoreSchema = Schema.Struct({
  name: CoreName,
  description: Schema.optionalWith(Schema.String, { exact: true }),
  module: Schema.String.pipe(Schema.filter((p) => path.isAbsolute(p) || "must be an absolute path")),
  packages: Schema.optionalWith(Schema.String.pipe(Schema.filter((p) => path.isAbsolute(p) || "must be an absolute folder path")), { exact: true }),
  api: Schema.optionalWith(Schema.Literal("chat", "messages", "none"), { exact: true })
})
const BuiltinCoreSchema = Schema.Struct({ name: CoreName, description: Schema.optionalWith(Schema.String, { exact: true }), builtin: Schema.Literal(true) })

/**
 * Why the sandbox could not mount and import a core's module, or none: it must be a readable
 * regular file (after links) with an ES module's extension, readable by the sandbox's user.
 */
export const unmountableCoreModule = (file: string): string | undefined => {
  if (!/\.(mjs|js)$/.test(file)) return "is not an ES module file (.mjs or .js)"
  let stat: fs.Stats
  try {
    stat = fs.statSync(file)
  } catch {
    return "does not exist"
  }
  if (!stat.isFile()) return "is not a regular file"
  if ((stat.mode & 0o004) === 0) return "is not readable by others (the sandbox runs as its own user): chmod o+r"
  try {
    fs.accessSync(file, fs.constants.R_OK)
  } catch {
    return "is not readable"
  }
  return undefined
}

/** Why the sandbox could not mount a core's `packages` folder, or none: a folder others may read and enter. */
export const unmountableCorePackages = (dir: string): string | undefined => {
  let stat: fs.Stats
  try {
    stat = fs.statSync(dir)
  } catch {
    return "does not exist"
  }
  if (!stat.isDirectory()) return "is not a folder"
  if ((stat.mode & 0o005) !== 0o005) return "is not readable and searchable by others (the sandbox runs as its own user): chmod o+rx"
  return undefined
}

// The branch is picked by its key; a core the host cannot mount is refused now, not at its first turn.
const checkAgentCore = (input: unknown): Checked<AgentCore> => {
  const has = (key: string) => input !== null && typeof input === "object" && key in input
  if (has("run") && !has("module")) {
    return Either.left(["run: a core runs inside the sandbox, not on the host: give `module`, the absolute path of an ES module whose default export is `async (context) => void`"])
  }
  const builtin = has("builtin")
  const decoded: Either.Either<AgentCore, Array<string>> = builtin ? decodeWith(BuiltinCoreSchema, input, "error") : decodeWith(ModuleCoreSchema, input, "error")
  return Either.flatMap(decoded, (core): Checked<AgentCore> => {
    if ("builtin" in core) {
      return builtinCoreInfo(core.name) === undefined ? Either.left([`name: the runner carries no built-in core named '${core.name}'`]) : Either.right({ name: core.name, value: core })
    }
    const problem = unmountableCoreModule(core.module)
    if (problem !== undefined) return Either.left([`module: ${core.module} ${problem}`])
    const packages = core.packages === undefined ? undefined : unmountableCorePackages(core.packages)
    return packages === undefined ? Either.right({ name: core.name, value: core }) : Either.left([`packages: ${core.packages} ${packages}`])
  })
}

export const ServiceHandlerSchema = Schema.Struct({
  name: Schema.String.pipe(
    Schema.pattern(/^[a-z][a-z0-9_-]*(\.[a-z0-9_-]+)*$/, { message: () => "must be an action id like 'hello.greet' (a-z, 0-9, '_', '-', dot-separated)" })
  ),
  description: Schema.NonEmptyTrimmedString,
  inputSchema: Schema.Struct({ type: Schema.Literal("object") }, Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  risk: Schema.Literal("low", "medium", "high"),
  handler: Fn
})

export const ActionSpecSchema = Schema.Struct({
  id: Name,
  surfaces: Schema.NonEmptyArray(Schema.NonEmptyString),
  evidence: Strings
})

export const SkillPathSchema = Schema.String.pipe(Schema.filter((p) => path.isAbsolute(p) || "must be an absolute folder path"))

export const ChannelSchema = Schema.Struct({
  name: Name,
  idempotentResends: Schema.Boolean,
  audio: Schema.optional(Schema.Literal("wav", "ogg_opus")),
  send: Fn,
  progress: Schema.optional(Fn),
  start: Schema.optional(Fn),
  close: Schema.optional(Fn)
})

export const ConnectionRuntimeSchema = Schema.Struct({ name: Name, start: Fn, close: Fn, isReady: Fn })
/** The Effect-native shape of the built-ins: closed with its scope, `isReady` an Effect. */
export const NativeConnectionRuntimeSchema = Schema.Struct({ name: Name, start: Fn, isReady: Schema.declare((u: unknown) => Effect.isEffect(u), { description: "an Effect" }) })
export const SpeechSynthesizerSchema = Schema.Struct({ name: Name, synthesize: Fn })
export const ContainerRuntimeSchema = Schema.Struct({ name: Name, start: Fn, kill: Fn, isAlive: Fn })
export const TunnelSchema = Schema.Struct({ name: Name, detect: Fn })
export const ObserverSchema = Schema.Struct({ name: Name, onEvent: Fn })

/** A workspace spec is a `workspaces:` entry of pynchy.yaml: same schema, unknown fields refused. */
export const WorkspaceSpecSchema = Workspace

/** A skill folder after inspection: its name comes from SKILL.md frontmatter, else the folder name. */
export interface SkillFolder {
  readonly name: string
  readonly path: string
  readonly description?: string
  readonly tier?: string
}

/** The registry's value type per hook. */
export interface ContributionTypes {
  readonly agentCore: AgentCore
  readonly serviceHandler: ServiceHandler
  readonly actionSpecs: ActionSpec
  readonly skillPaths: SkillFolder
  readonly createChannel: Channel
  readonly connectionRuntime: AnyConnectionRuntime
  readonly speechSynthesizer: SpeechSynthesizer
  readonly containerRuntime: ContainerRuntime
  readonly tunnel: Tunnel
  readonly observer: Observer
  readonly mcpServerSpec: McpServerSpec
  readonly workspaceSpec: Workspace
}

/** A checked contribution, or every problem found in it (path + reason, no values). */
export type Checked<A> = Either.Either<{ readonly name: string; readonly value: A }, ReadonlyArray<string>>

const kindOf = (u: unknown): string =>
  u === null ? "null" : Array.isArray(u) ? "an array" : typeof u === "object" ? "an object" : typeof u

const valueAt = (root: unknown, at: ReadonlyArray<PropertyKey>): unknown =>
  at.reduce<unknown>((u, k) => (u !== null && typeof u === "object" ? (u as Record<PropertyKey, unknown>)[k] : undefined), root)

/**
 * Every issue of a failed decode as `path: reason`. Schema messages quote the actual value; a
 * contribution may carry secrets (an MCP server's env), so only the value's kind is kept.
 */
const issues = (error: Parameters<typeof ArrayFormatter.formatErrorSync>[0], input: unknown): Array<string> =>
  ArrayFormatter.formatErrorSync(error).map((issue) => {
    const at = issue.path.length > 0 ? issue.path.map(String).join(".") : "(value)"
    const stripped = issue.message.replace(/,?\s*actual [\s\S]*$/, "")
    const reason = stripped === issue.message ? issue.message : `${stripped}, got ${kindOf(valueAt(input, issue.path))}`
    return `${at}: ${reason.replace(/\s+/g, " ")}`
  })

const decodeWith = <A, I>(schema: Schema.Schema<A, I>, input: unknown, excess: "ignore" | "error") =>
  Either.mapLeft(Schema.decodeUnknownEither(schema)(input, { errors: "all", onExcessProperty: excess }), (e) => issues(e, input))

/** Checks objects with methods: the author's object is kept so methods keep their `this`. */
const objectWith = <A extends { readonly name: string }>(schema: Schema.Schema<any, any>) => (input: unknown): Checked<A> =>
  Either.map(decodeWith(schema, input, "ignore"), () => ({ name: (input as A).name, value: input as A }))

// Frontmatter is nearly always flat `key: value` lines; the YAML parser costs ~100x more, so it
// only runs for anything else (lists, blocks, anchors).
const SIMPLE_LINE = /^([A-Za-z_][\w-]*):[ \t]*(?:"([^"\\]*)"|'([^']*)'|([^"'#[\]{}&*!|>%@`\s][^#]*?|))[ \t]*$/

const parseFrontmatter = (block: string): Either.Either<Record<string, unknown>, string> => {
  const simple: Record<string, unknown> = {}
  for (const line of block.split(/\r?\n/)) {
    if (line.trim() === "" || line.trimStart().startsWith("#")) continue
    const m = SIMPLE_LINE.exec(line)
    if (m === null) return parseYamlFrontmatter(block)
    simple[m[1]!] = m[2] ?? m[3] ?? m[4] ?? ""
  }
  return Either.right(simple)
}

const parseYamlFrontmatter = (block: string): Either.Either<Record<string, unknown>, string> => {
  try {
    const data: unknown = parseYaml(block)
    return data !== null && typeof data === "object" && !Array.isArray(data)
      ? Either.right(data as Record<string, unknown>)
      : Either.left("SKILL.md frontmatter is not a mapping")
  } catch {
    return Either.left("SKILL.md frontmatter is not valid YAML")
  }
}

const frontmatterOf = (text: string): Either.Either<Record<string, unknown>, string> => {
  const match = /^---\r?\n([\s\S]*?)\r?\n---(\r?\n|$)/.exec(text)
  return match === null ? Either.right({}) : parseFrontmatter(match[1] ?? "")
}

/** A skill folder from the text of its SKILL.md (read by the caller, who decides how far to trust the file). */
export const skillFolderFrom = (folder: string, text: string): Checked<SkillFolder> =>
  Either.match(frontmatterOf(text), {
    onLeft: (reason) => Either.left([`${path.join(folder, "SKILL.md")}: ${reason}`]),
    onRight: (fm) => {
      const name = typeof fm.name === "string" && fm.name.trim() !== "" ? fm.name.trim() : path.basename(folder)
      return Either.right({
        name,
        value: {
          name,
          path: folder,
          ...(typeof fm.description === "string" ? { description: fm.description } : {}),
          ...(typeof fm.tier === "string" ? { tier: fm.tier } : {})
        }
      })
    }
  })

// A plugin's skill folder is operator-installed code, read once at startup.
const checkSkill = (input: unknown): Checked<SkillFolder> =>
  Either.flatMap(decodeWith(SkillPathSchema, input, "error"), (folder): Checked<SkillFolder> => {
    let text: string
    try {
      text = fs.readFileSync(path.join(folder, "SKILL.md"), "utf8")
    } catch {
      return Either.left([`${folder}: no readable SKILL.md in this folder`])
    }
    return skillFolderFrom(folder, text)
  })

/** The trust level of a hook, from the seed's security table. */
export type Trust = "highest" | "high" | "medium"

export interface Category<K extends HookName> {
  readonly hook: K
  /** What one contribution is, in a sentence (for `pynchy plugins` and docs). */
  readonly noun: string
  readonly trust: Trust
  readonly check: (input: unknown) => Checked<ContributionTypes[K]>
}

type Categories = { readonly [K in HookName]: Category<K> }

/**
 * Hooks whose contributions nothing in the host uses yet. A valid contribution to one is refused
 * (`hook_not_supported`) rather than accepted and silently ignored; a hook leaves this set in the
 * change that gives it a consumer.
 */
export const UNSUPPORTED_HOOKS: ReadonlySet<HookName> = new Set<HookName>([])

export const CATEGORIES: Categories = {
  agentCore: { hook: "agentCore", noun: "agent core", trust: "medium", check: checkAgentCore },
  serviceHandler: { hook: "serviceHandler", noun: "service handler", trust: "high", check: objectWith(ServiceHandlerSchema) },
  actionSpecs: {
    hook: "actionSpecs",
    noun: "action spec",
    trust: "high",
    check: (input) => Either.map(decodeWith(ActionSpecSchema, input, "error"), (value) => ({ name: value.id, value }))
  },
  skillPaths: { hook: "skillPaths", noun: "skill", trust: "medium", check: checkSkill },
  createChannel: { hook: "createChannel", noun: "channel", trust: "highest", check: objectWith(ChannelSchema) },
  connectionRuntime: {
    hook: "connectionRuntime",
    noun: "connection runtime",
    trust: "highest",
    check: (input) => isNative(input) ? objectWith<NativeConnectionRuntime>(NativeConnectionRuntimeSchema)(input) : objectWith<ConnectionRuntime>(ConnectionRuntimeSchema)(input)
  },
  speechSynthesizer: { hook: "speechSynthesizer", noun: "speech synthesizer", trust: "high", check: objectWith(SpeechSynthesizerSchema) },
  containerRuntime: { hook: "containerRuntime", noun: "container runtime", trust: "highest", check: objectWith(ContainerRuntimeSchema) },
  tunnel: { hook: "tunnel", noun: "tunnel", trust: "high", check: objectWith(TunnelSchema) },
  observer: { hook: "observer", noun: "observer", trust: "high", check: objectWith(ObserverSchema) },
  mcpServerSpec: {
    hook: "mcpServerSpec",
    noun: "MCP server",
    trust: "medium",
    check: (input) => Either.map(decodeWith(McpServerSpec, input, "error"), (value) => ({ name: value.name, value }))
  },
  workspaceSpec: {
    hook: "workspaceSpec",
    noun: "workspace",
    trust: "medium",
    check: (input) => Either.map(decodeWith(WorkspaceSpecSchema, input, "error"), (value) => ({ name: value.id, value }))
  }
}
