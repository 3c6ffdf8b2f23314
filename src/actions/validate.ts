/**
 * Host-action input schemas, checked by ajv (JSON Schema draft-07 with ajv-formats), compiled once
 * per action at startup. Fail closed throughout: ajv's strict mode refuses unknown keywords,
 * unknown formats, keywords applied to a type the schema does not declare and `required`
 * properties it does not define, so a keyword is enforced or the schema does not compile, and a
 * schema that does not compile stops startup, naming the plugin and the action. Problems name the
 * path and the rule, never the value; an agent-chosen property name is shown only when it is
 * plainly an identifier.
 */
import { Ajv, type ErrorObject } from "ajv"
import addFormatsModule from "ajv-formats"
import { Either, Schema } from "effect"
import type { ServiceHandler } from "../contracts/plugin.js"

/** One input schema that did not compile. */
export class ActionSchemaFault extends Schema.Class<ActionSchemaFault>("ActionSchemaFault")({
  plugin: Schema.String,
  action: Schema.String,
  problem: Schema.String
}) {}

/** Startup refuses the host actions: every input schema that does not compile is listed. */
export class ActionSchemaInvalid extends Schema.TaggedError<ActionSchemaInvalid>()("ActionSchemaInvalid", {
  faults: Schema.Array(ActionSchemaFault)
}) {
  override get message() {
    return `${this.faults.length} action input schema(s) do not compile\n` +
      this.faults.map((f) => `  - plugin '${f.plugin}', action '${f.action}': invalid_action_schema: ${f.problem}`).join("\n")
  }
}

/** A handler with the plugin that contributed it (a registry contribution has this shape). */
export interface OwnedHandler {
  readonly plugin: string
  readonly value: ServiceHandler
}

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

/**
 * The checks of the host's own handlers (the agent tasks), each compiled on its first call. Their
 * schemas are the host's code, compiled by a test (test/actions/validate.test.ts), so a start does
 * not pay ajv's first compile (its meta-schema: ~40 ms here) for them. Fail closed all the same: a
 * schema that does not compile refuses every call.
 */
export const checksOnFirstUse = (handlers: ReadonlyArray<{ readonly name: string; readonly inputSchema: object }>): ReadonlyMap<string, InputCheck> => {
  let ajv: Ajv | undefined
  return new Map(handlers.map(({ inputSchema, name }): [string, InputCheck] => {
    let check: InputCheck | undefined
    return [name, (input) => {
      check ??= Either.getOrElse(compileInput(ajv ??= newValidator(), inputSchema), (problem) => () => [`input: the action's schema does not compile (${problem})`])
      return check(input)
    }]
  }))
}

/** Every handler's schema compiled, by action id; or every one that does not compile. */
export const compileHandlers = (handlers: ReadonlyArray<OwnedHandler>): Either.Either<ReadonlyMap<string, InputCheck>, ActionSchemaInvalid> => {
  // No plugin handlers (the default host): no validator to build either.
  if (handlers.length === 0) return Either.right(new Map())
  const ajv = newValidator()
  const checks = new Map<string, InputCheck>()
  const faults: Array<ActionSchemaFault> = []
  for (const { plugin, value } of handlers) {
    Either.match(compileInput(ajv, value.inputSchema), {
      onLeft: (problem) => faults.push(ActionSchemaFault.make({ plugin, action: value.name, problem })),
      onRight: (check) => checks.set(value.name, check)
    })
  }
  return faults.length > 0 ? Either.left(new ActionSchemaInvalid({ faults })) : Either.right(checks)
}
