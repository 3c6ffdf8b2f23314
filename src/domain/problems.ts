/**
 * The one formatter of decode errors: each problem is one line, `path: what is wrong (found ...;
 * expected ...)`. It walks Effect's ParseIssue tree (the same walk as ArrayFormatter, whose
 * messages it keeps where a schema set its own) and never prints a whole section: a value found
 * is summarised by its kind and size, and strings are never echoed (a token written where its
 * digest belongs must not end up in a log).
 */
import { Option } from "effect"
import { ArrayFormatter, type ParseError, type ParseIssue } from "effect/ParseResult"
import * as AST from "effect/SchemaAST"
import { Problem } from "./errors.js"
import { nearest } from "./near.js"

type Path = ReadonlyArray<PropertyKey>

/** What was found, never the value of a string and never more than a few words. */
export const found = (actual: unknown): string => {
  if (actual === undefined) return "nothing"
  if (actual === null) return "null"
  if (typeof actual === "string") return actual === "" ? "an empty string" : `a string of ${actual.length} character${actual.length === 1 ? "" : "s"}`
  if (typeof actual === "number" || typeof actual === "boolean") return String(actual)
  if (Array.isArray(actual)) return `a list of ${actual.length}`
  if (typeof actual === "object") {
    const keys = Object.keys(actual)
    return keys.length === 0 ? "an empty mapping" : `a mapping with ${list(keys)}`
  }
  return typeof actual
}

const list = (names: ReadonlyArray<string>, max = 6): string =>
  names.length <= max ? names.join(", ") : `${names.slice(0, max).join(", ")} and ${names.length - max} more`

/** What a schema expects, in words. */
const expected = (ast: AST.AST): string => {
  const described = Option.orElse(AST.getDescriptionAnnotation(ast), () => AST.getTitleAnnotation(ast))
  if (Option.isSome(described)) return described.value
  switch (ast._tag) {
    case "StringKeyword":
      return "a string"
    case "NumberKeyword":
      return "a number"
    case "BooleanKeyword":
      return "true or false"
    case "UndefinedKeyword":
      return "nothing"
    case "Literal":
      return JSON.stringify(ast.literal)
    case "TupleType":
      return ast.elements.length === 0 && ast.rest.length > 0 ? "a list" : "a list"
    case "TypeLiteral": {
      if (ast.propertySignatures.length === 0) return "a mapping"
      const required = ast.propertySignatures.filter((p) => !p.isOptional).map((p) => String(p.name))
      return required.length > 0 ? `a mapping with ${list(required)}` : `a mapping of ${list(ast.propertySignatures.map((p) => String(p.name)))}`
    }
    case "Union": {
      const members = ast.types.filter((t) => !AST.isUndefinedKeyword(t))
      return members.length === 1 ? expected(members[0]!) : `one of ${members.map(expected).join(", ")}`
    }
    case "Refinement":
      return expected(ast.from)
    case "Transformation":
      return expected(ast.from)
    case "Declaration":
      return Option.getOrElse(AST.getIdentifierAnnotation(ast), () => "a value of another kind")
    case "Suspend":
      return expected(ast.f())
    default:
      return String(ast).replace(/ \(Encoded side\)$/, "")
  }
}

const line = (path: Path, reason: string): Problem => Problem.make({ path: path.map(String).join("."), reason })

/** A message the schema set itself (Schema.pattern(..., { message })), as ArrayFormatter reads it. */
const ownMessage = (issue: ParseIssue): string | undefined => {
  if (!("ast" in issue)) return undefined
  if (Option.isNone(AST.getMessageAnnotation(issue.ast))) return undefined
  return ArrayFormatter.formatIssueSync(issue)[0]?.message
}

/** The members of a union that failed, minus the `undefined` an optional field adds. */
const unionIssues = (issue: ParseIssue & { _tag: "Composite" }): ReadonlyArray<ParseIssue> => {
  const all = Array.isArray(issue.issues) ? issue.issues as ReadonlyArray<ParseIssue> : [issue.issues as ParseIssue]
  if (!AST.isUnion(issue.ast)) return all
  const kept = all.filter((i) => !(i._tag === "Type" && AST.isUndefinedKeyword(i.ast)))
  return kept.length > 0 ? kept : all
}

/** `keys`: the keys the enclosing mapping knows, for an unexpected one. */
const walk = (issue: ParseIssue, path: Path, keys: ReadonlyArray<string> = []): Array<Problem> => {
  const own = ownMessage(issue)
  if (own !== undefined) return [line(path, `${own} (found ${found(issue.actual)})`)]
  switch (issue._tag) {
    case "Pointer":
      return walk(issue.issue, [...path, ...(Array.isArray(issue.path) ? issue.path : [issue.path])], keys)
    case "Composite": {
      const issues = unionIssues(issue)
      // A value of the wrong kind for every member of a union: one line naming them all.
      if (AST.isUnion(issue.ast) && issues.length > 1 && issues.every((i) => i._tag === "Type")) {
        return [line(path, `wrong kind of value (found ${found(issue.actual)}; expected ${expected(issue.ast)})`)]
      }
      const known = AST.isTypeLiteral(issue.ast) ? issue.ast.propertySignatures.map((p) => String(p.name)) : keys
      return issues.flatMap((i) => walk(i, path, known))
    }
    case "Refinement":
      return issue.kind === "From"
        ? walk(issue.issue, path, keys)
        : [line(path, `wrong value (found ${found(issue.actual)}; expected ${expected(issue.ast)})`)]
    case "Transformation":
      return walk(issue.issue, path, keys)
    case "Type":
      return [line(path, `wrong kind of value (found ${found(issue.actual)}; expected ${expected(issue.ast)})`)]
    case "Missing":
      return [line(path, `missing (found nothing; expected ${expected("type" in issue.ast ? issue.ast.type as AST.AST : issue.ast)})`)]
    case "Unexpected": {
      // A typo gets the key it was meant to be; a key with no near one gets the list.
      const near = nearest(String(path[path.length - 1] ?? ""), keys)
      return [line(path, near !== undefined
        ? `unknown key; did you mean '${near}'?`
        : `unknown key (found ${found(issue.actual)}; expected ${keys.length > 0 ? `one of ${list(keys, 30)}` : "no other key"})`)]
    }
    case "Forbidden":
      return [line(path, issue.message ?? "forbidden")]
  }
}

/** Every issue of a parse error, as path + one-line reason (all of them, not the first). */
export const problemsOf = (error: ParseError, prefix: ReadonlyArray<PropertyKey> = []): Array<Problem> => walk(error.issue, prefix)

/** One problem as the user reads it: `path: what is wrong (found; expected)`. */
export const problemLine = (p: Problem): string => `${p.path || "(root)"}: ${p.reason}`
