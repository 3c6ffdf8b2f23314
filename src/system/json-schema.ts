/**
 * JSON Schema checks of what crosses into the host: ajv (draft-07 with ajv-formats) in strict mode,
 * so a keyword is enforced or the schema does not compile: strict mode refuses unknown keywords,
 * unknown formats, keywords applied to a type the schema does not declare and `required`
 * properties it does not define. Problems name the path and the rule, never the value; an
 * agent-chosen property name is shown only when it is plainly an identifier. The one path for
 * host actions' input schemas (src/actions/validate.ts) and host MCP tools' (src/mcp/McpHost.ts).
 */
import { Ajv, type ErrorObject } from "ajv"
import addFormatsModule from "ajv-formats"
import { Either } from "effect"

/** The problems of one input (empty when it conforms), each `path: rule`. */
export type InputCheck = (input: unknown) => Array<string>

// ajv-formats is CommonJS: under NodeNext its default import is the module object in the types.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: Ajv) => Ajv

/** One validator per host: strict, every error, no mutation of the input (no defaults, coercion or removal). */
export const newValidator = (): Ajv =>
  addFormats(new Ajv({ strict: true, allowUnionTypes: true, allErrors: true, addUsedSchema: false, validateFormats: true }))

const MAX_PROBLEM = 300
const SAFE_KEY = /^[A-Za-z0-9_-]{1,64}$/
const segment = (s: string): string => (SAFE_KEY.test(s) ? s : "*")

/** `/a/0/b~1c` (JSON Pointer) → `input.a.0.*`. */
const pathOf = (pointer: string): string =>
  ["input", ...pointer.split("/").slice(1).map((s) => segment(s.replace(/~1/g, "/").replace(/~0/g, "~")))].join(".")

/** ajv's messages are made of the schema (limits, patterns, formats), never of the data. */
const problemOf = (e: ErrorObject): string => {
  const at = pathOf(e.instancePath)
  const params = e.params as Record<string, unknown>
  if (e.keyword === "required" && typeof params.missingProperty === "string") return `${at}.${segment(params.missingProperty)}: required`
  if (e.keyword === "additionalProperties" && typeof params.additionalProperty === "string") {
    return `${at}.${segment(params.additionalProperty)}: not allowed (additionalProperties)`
  }
  return `${at}: ${(e.message ?? "invalid").slice(0, MAX_PROBLEM)} (${e.keyword})`
}

/** Compiles one schema: its check, or why it does not compile. */
export const compileInput = (ajv: Ajv, schema: object): Either.Either<InputCheck, string> => {
  try {
    const check = ajv.compile(schema)
    return Either.right((input) => (check(input) ? [] : (check.errors ?? []).map(problemOf)))
  } catch (e) {
    const reason = e instanceof Error ? e.message : String(e)
    return Either.left(reason.replace(/\s+/g, " ").slice(0, MAX_PROBLEM))
  }
}
