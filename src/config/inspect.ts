/**
 * A config file read to name every problem at once: YAML syntax, the schema, the cross-field
 * rules. A value the schema refuses (an unknown key, a number out of range) is left out and the
 * rest decoded again, so the later rules (and `config check`'s later checks) still run on
 * everything else; a problem on a value left out is not reported twice.
 */
import { Either, Option, Schema } from "effect"
import { isAlias, LineCounter, parseDocument, visit } from "yaml"
import { Problem } from "../domain/errors.js"
import { problemsOf } from "../domain/problems.js"
import { scheduleProblems } from "./schedules.js"
import { PynchyConfig } from "./schema.js"

/** What a config holds and what is wrong with it. */
export interface Inspected {
  /** The config, or (with problems) the config without the values the schema refused, when that decodes. */
  readonly config: Option.Option<PynchyConfig>
  readonly problems: ReadonlyArray<Problem>
  /** Paths of the values left out; a later check's problem on or around one of them is not reported. */
  readonly omitted: ReadonlyArray<string>
}

/** Aliases a file may expand: enough for any hand-written config, far below an alias bomb. */
export const MAX_ALIAS_COUNT = 100

/** Cross-field rules Schema cannot see: unique ids (routes name workspaces plugins may bring: src/plugins/workspaces.ts checks them). */
export const semanticProblems = (config: PynchyConfig): Array<Problem> => {
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

/** Whether a problem's path is a value left out, inside one, or holds one. */
export const touches = (path: string, omitted: ReadonlyArray<string>): boolean =>
  omitted.some((o) => path === o || path.startsWith(`${o}.`) || o.startsWith(`${path}.`))

const decode = (raw: unknown) => Schema.decodeUnknownEither(PynchyConfig)(raw ?? {}, { errors: "all", onExcessProperty: "error" })

/** Deletes the mapping key at `path` in a copy of `raw`; none when the path is not a key of a mapping (a list item, a missing key). */
const without = (raw: unknown, paths: ReadonlyArray<string>): Option.Option<unknown> => {
  const copy: unknown = structuredClone(raw)
  for (const p of paths) {
    const parts = p.split(".")
    let at: unknown = copy
    for (const part of parts.slice(0, -1)) at = typeof at === "object" && at !== null ? (at as Record<string, unknown>)[part] : undefined
    const last = parts[parts.length - 1]!
    if (typeof at !== "object" || at === null || Array.isArray(at) || !Object.hasOwn(at, last)) return Option.none()
    delete (at as Record<string, unknown>)[last]
  }
  return Option.some(copy)
}

/** Every problem of a parsed config; the config (or its decodable rest) when there is one. */
export const inspectRaw = (raw: unknown): Inspected => {
  const decoded = decode(raw)
  if (Either.isRight(decoded)) return { config: Option.some(decoded.right), problems: semanticProblems(decoded.right), omitted: [] }
  const problems = problemsOf(decoded.left)
  const omitted = [...new Set(problems.map((p) => p.path))]
  const rest = Option.flatMap(without(raw, omitted), (r) => Option.getRight(decode(r)))
  if (Option.isNone(rest)) return { config: Option.none(), problems, omitted }
  const later = semanticProblems(rest.value).filter((p) => !touches(p.path, omitted))
  return { config: rest, problems: [...problems, ...later], omitted }
}

const at = (lines: LineCounter, offset: number | undefined) => {
  if (offset === undefined) return ""
  const { line, col } = lines.linePos(offset)
  return `line ${line}:${col}`
}

/**
 * YAML text to a plain value, or its problems: syntax errors with their line and column, an alias
 * to an anchor that is not set, and aliases that expand past MAX_ALIAS_COUNT (an alias bomb).
 */
export const parseYaml = (text: string): Either.Either<unknown, ReadonlyArray<Problem>> => {
  const lines = new LineCounter()
  const doc = parseDocument(text, { prettyErrors: true, lineCounter: lines })
  if (doc.errors.length > 0) {
    return Either.left(doc.errors.map((e) =>
      Problem.make({ path: e.linePos ? `line ${e.linePos[0].line}:${e.linePos[0].col}` : "", reason: e.message.split("\n")[0] ?? e.code })
    ))
  }
  const unresolved: Array<Problem> = []
  visit(doc, {
    Alias: (_key, node) => {
      if (isAlias(node) && node.resolve(doc) === undefined) {
        unresolved.push(Problem.make({ path: at(lines, node.range?.[0]), reason: `alias *${node.source} names no anchor set before it (&${node.source})` }))
      }
    }
  })
  if (unresolved.length > 0) return Either.left(unresolved)
  try {
    return Either.right(doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT }))
  } catch (e) {
    return Either.left([Problem.make({
      path: "",
      reason: /alias/i.test((e as Error).message)
        ? `its aliases expand to too many nodes (more than ${MAX_ALIAS_COUNT} per alias): not read`
        : `cannot be read: ${(e as Error).message.split("\n")[0]}`
    })])
  }
}
