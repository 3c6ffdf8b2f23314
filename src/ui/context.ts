import { Context, Data, Effect, Schema } from "effect"
import type { Session } from "./auth.js"

/** The signed-in user of the request being served. */
export class CurrentSession extends Context.Tag("pynchy/ui/CurrentSession")<CurrentSession, Session>() {}

/** What a UI request answers when it does not succeed: a status and a sentence for the user. */
export class UiFailure extends Data.TaggedError("UiFailure")<{ readonly status: number; readonly reason: string }> {}

/** The fields of the POST being served, read once by the server (which checks its CSRF token first). */
export class PostedForm extends Context.Tag("pynchy/ui/PostedForm")<PostedForm, Readonly<Record<string, string>>>() {}

/** Decodes the posted form's fields with a schema (unknown fields, `csrf` among them, are ignored). */
export const decodeForm = <A, I>(schema: Schema.Schema<A, I>) =>
  Effect.flatMap(PostedForm, (form) => Schema.decodeUnknown(schema)(form))
