/**
 * What a command that failed prints: one block per failure, its message and never a stack frame
 * (the user reads this, not the bundle's line numbers). A failure that carries its own lines (a
 * config's problems) keeps them; an error without a message is named by its tag.
 */
import { Cause } from "effect"

/** A line of a JavaScript stack trace (`    at fn (file:1:2)`), as a test recognises them too. */
export const STACK_FRAME = /^\s+at .+:\d+:\d+\)?$/

const withoutFrames = (text: string): string =>
  text.split("\n").filter((l) => !STACK_FRAME.test(l) && !/^\s+at (?:async )?[^\s]+ \(node:/.test(l)).join("\n").trimEnd()

/** One failure or defect as text: its message (a defect's with its name), its own lines kept, frames dropped. */
export const describeError = (error: unknown): string => {
  if (error instanceof Error || (typeof error === "object" && error !== null && "message" in error)) {
    const e = error as { readonly _tag?: unknown; readonly name?: unknown; readonly message?: unknown }
    const name = typeof e._tag === "string" ? e._tag : typeof e.name === "string" ? e.name : "Error"
    const message = typeof e.message === "string" && e.message !== "" ? e.message : undefined
    // A tagged error's message is written for the user; a bare Error (a defect) keeps its name.
    return withoutFrames(message === undefined ? name : typeof e._tag === "string" ? message : `${name}: ${message}`)
  }
  if (typeof error === "object" && error !== null && "_tag" in error) return String((error as { _tag: unknown })._tag)
  return withoutFrames(String(error))
}

/** The lines a failed command prints; none when it was only interrupted (Ctrl-C). */
export const failureText = (cause: Cause.Cause<unknown>): string | undefined => {
  const errors = [...Cause.failures(cause), ...Cause.defects(cause)]
  if (errors.length === 0) return Cause.isInterruptedOnly(cause) ? undefined : withoutFrames(Cause.pretty(cause))
  return [...new Set(errors.map(describeError))].join("\n")
}
