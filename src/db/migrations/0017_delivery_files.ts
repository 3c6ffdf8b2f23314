import { ddl } from "../dialect.js"

/**
 * The files a reply carries (the agent's outbox, src/files/outbox.ts): numbered from 1 per
 * delivery, written once before the delivery is recorded, each sent as one more part of it.
 */
export const m0017_delivery_files = ddl`CREATE TABLE delivery_files (
    delivery_key TEXT NOT NULL,
    n INTEGER NOT NULL,
    name TEXT NOT NULL,
    mime_type TEXT NOT NULL,
    bytes ${{ sqlite: "BLOB", pg: "BYTEA" }} NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (delivery_key, n)
  )`
