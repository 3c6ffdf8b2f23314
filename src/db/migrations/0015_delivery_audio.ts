import { ddl } from "../dialect.js"

/**
 * The audio of spoken replies (src/speech): one row per delivery, in the format its channel
 * sends, written once (the first synthesis wins) and sent as one more part of the delivery.
 */
export const m0015_delivery_audio = ddl`CREATE TABLE delivery_audio (
    delivery_key TEXT PRIMARY KEY,
    format TEXT NOT NULL CHECK (format IN ('wav', 'ogg_opus')),
    bytes ${{ sqlite: "BLOB", pg: "BYTEA" }} NOT NULL,
    created_at INTEGER NOT NULL
  )`
