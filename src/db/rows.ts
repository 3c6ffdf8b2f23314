import { Schema } from "effect"
import { Metadata } from "../domain/message.js"

/** A JSON text column decoded into a value (metadata, definitions, statuses). */
export const JsonColumn = <A, I, R>(schema: Schema.Schema<A, I, R>) => Schema.parseJson(schema)

export const MetadataColumn = JsonColumn(Metadata)
