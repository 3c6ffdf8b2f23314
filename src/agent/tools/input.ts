/**
 * Hand-written checks of a tool's input (the runner bundle stays small: no JSON Schema validator
 * inside the sandbox). Each check names the field and what was wrong, never echoes the value.
 */

export type Checked<A> = { readonly ok: true; readonly value: A } | { readonly ok: false; readonly error: string }

type Field = { readonly type: "string" | "integer"; readonly required?: boolean; readonly min?: number; readonly max?: number; readonly nonEmpty?: boolean }

/** Checks `input` against `fields` (a plain object with only these keys). */
export const check = <A>(input: unknown, fields: Record<string, Field>): Checked<A> => {
  if (input === null || typeof input !== "object" || Array.isArray(input)) return { ok: false, error: "the input must be a JSON object" }
  const o = input as Record<string, unknown>
  for (const key of Object.keys(o)) {
    if (!(key in fields)) return { ok: false, error: `unknown field '${key.slice(0, 40)}' (fields: ${Object.keys(fields).join(", ")})` }
  }
  for (const [key, f] of Object.entries(fields)) {
    const v = o[key]
    if (v === undefined || v === null) {
      if (f.required === true) return { ok: false, error: `'${key}' is required` }
      continue
    }
    if (f.type === "string") {
      if (typeof v !== "string") return { ok: false, error: `'${key}' must be a string` }
      if (f.nonEmpty === true && v === "") return { ok: false, error: `'${key}' must not be empty` }
    } else {
      if (typeof v !== "number" || !Number.isInteger(v)) return { ok: false, error: `'${key}' must be an integer` }
      if (f.min !== undefined && v < f.min) return { ok: false, error: `'${key}' must be at least ${f.min}` }
      if (f.max !== undefined && v > f.max) return { ok: false, error: `'${key}' must be at most ${f.max}` }
    }
  }
  return { ok: true, value: o as A }
}
