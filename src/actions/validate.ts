/**
 * Host-action input schemas, checked by ajv in strict mode (src/system/json-schema.ts), compiled
 * once per action at startup. Fail closed throughout: a schema that does not compile stops
 * startup, naming the plugin and the action.
 */
import type { Ajv } from "ajv"
import { Either, Schema } from "effect"
import type { ServiceHandler } from "../contracts/plugin.js"
import { compileInput, type InputCheck, newValidator } from "../system/json-schema.js"

export type { InputCheck }

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
