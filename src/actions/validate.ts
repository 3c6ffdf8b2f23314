/**
 * The JSON Schema subset host-action inputs are checked against: `type`, `properties`,
 * `required`, `additionalProperties: false`, `enum`, string `minLength`/`maxLength`, number
 * `minimum`/`maximum`, array `items`. Problems name the path and the rule, never the value.
 */
type JsonSchema = { readonly [key: string]: unknown }

const typeOf = (v: unknown): string =>
  v === null ? "null" : Array.isArray(v) ? "array" : Number.isInteger(v) ? "integer" : typeof v

const matchesType = (v: unknown, type: string): boolean => {
  const actual = typeOf(v)
  return type === actual || (type === "number" && actual === "integer")
}

export const validate = (schema: JsonSchema, value: unknown, at = "input"): Array<string> => {
  const problems: Array<string> = []
  const types = typeof schema.type === "string" ? [schema.type] : Array.isArray(schema.type) ? (schema.type as Array<string>) : []
  if (types.length > 0 && !types.some((t) => matchesType(value, t))) {
    return [`${at}: expected ${types.join(" or ")}, got ${typeOf(value)}`]
  }
  if (Array.isArray(schema.enum) && !schema.enum.some((e) => e === value)) problems.push(`${at}: not one of the allowed values`)
  if (typeof value === "string") {
    if (typeof schema.minLength === "number" && value.length < schema.minLength) problems.push(`${at}: shorter than ${schema.minLength}`)
    if (typeof schema.maxLength === "number" && value.length > schema.maxLength) problems.push(`${at}: longer than ${schema.maxLength}`)
  }
  if (typeof value === "number") {
    if (typeof schema.minimum === "number" && value < schema.minimum) problems.push(`${at}: below ${schema.minimum}`)
    if (typeof schema.maximum === "number" && value > schema.maximum) problems.push(`${at}: above ${schema.maximum}`)
  }
  if (Array.isArray(value) && schema.items !== null && typeof schema.items === "object") {
    value.forEach((item, i) => problems.push(...validate(schema.items as JsonSchema, item, `${at}.${i}`)))
  }
  if (value !== null && typeof value === "object" && !Array.isArray(value)) {
    const obj = value as Record<string, unknown>
    const properties = (schema.properties ?? {}) as Record<string, JsonSchema>
    for (const key of Array.isArray(schema.required) ? (schema.required as Array<string>) : []) {
      if (!(key in obj)) problems.push(`${at}.${key}: required`)
    }
    for (const [key, v] of Object.entries(obj)) {
      const sub = properties[key]
      if (sub !== undefined && sub !== null && typeof sub === "object") problems.push(...validate(sub, v, `${at}.${key}`))
      else if (schema.additionalProperties === false) problems.push(`${at}.${key}: not allowed`)
    }
  }
  return problems
}
