import { ArrayFormatter, type ParseError } from "effect/ParseResult"
import { Problem } from "./errors.js"

/** Every issue of a parse error, as path + reason (all of them, not the first). */
export const problemsOf = (error: ParseError, prefix: ReadonlyArray<PropertyKey> = []): Array<Problem> =>
  ArrayFormatter.formatErrorSync(error).map((issue) =>
    Problem.make({ path: [...prefix, ...issue.path].map(String).join("."), reason: issue.message })
  )
