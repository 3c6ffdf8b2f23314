/**
 * The one check of a place (the provider's room, chat or session name, the part of a conversation
 * id after `<connection>:`), used by every way a conversation id is made: ingest (every channel),
 * the HTTP API's path, `pynchy send`, a connection's `sharedPlaces`. A place is 1-255 characters
 * with no space at either end, holds no control character (C0, DEL, C1) and no lone surrogate,
 * and is not `.` or `..` (it names folders and URLs elsewhere).
 */
import { Schema } from "effect"

export const MAX_PLACE_CHARS = 255

const CONTROL = /[\u0000-\u001f\u007f-\u009f]/
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

/** What is wrong with a text as a conversation id's part, or undefined: the reason, never the value. */
export const controlProblem = (text: string): string | undefined =>
  CONTROL.test(text) ? "must not hold control characters (newline, tab, NUL and the like)"
    : LONE_SURROGATE.test(text) ? "must be well-formed text (it holds a lone surrogate)"
    : undefined

/** What is wrong with a place, or undefined. */
export const placeProblem = (place: string): string | undefined =>
  place.length === 0 || place.length > MAX_PLACE_CHARS ? `must be 1-${MAX_PLACE_CHARS} characters`
    : place.trim() !== place ? "must not start or end with a space"
    : place === "." || place === ".." ? "must not be '.' or '..'"
    : controlProblem(place)

export const Place = Schema.String.pipe(
  Schema.filter((p) => placeProblem(p) ?? true, { description: `a place: 1-${MAX_PLACE_CHARS} characters, no control characters` })
)
