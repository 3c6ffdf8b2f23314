import { ddl } from "../dialect.js"

/**
 * The parts of long replies (src/channels/parts.ts): one row per part handed to a platform,
 * written `sending` before the call and `sent` after. A part left `sending` by a crash may or may
 * not have arrived; a resend of the delivery sends only the parts without a row.
 */
export const m0014_delivery_parts = ddl`CREATE TABLE delivery_parts (
    part_key TEXT PRIMARY KEY,
    status TEXT NOT NULL CHECK (status IN ('sending', 'sent')),
    updated_at INTEGER NOT NULL
  )`
