import { Schema } from "effect"
import { Metadata } from "../domain/message.js"

/** A JSON text column decoded into a value (metadata, definitions, statuses). */
export const JsonColumn = <A, I, R>(schema: Schema.Schema<A, I, R>) => Schema.parseJson(schema)

export const MetadataColumn = JsonColumn(Metadata)

/** SQLite has no booleans: 0/1 columns. */
export const BoolColumn = Schema.transform(Schema.Number, Schema.Boolean, {
  strict: true,
  decode: (n) => n !== 0,
  encode: (b) => (b ? 1 : 0)
})
