import { ddl } from "../dialect.js"

/**
 * Gateway keys for the user's own tools (`pynchy keys`): only the SHA-256 digest of a key is
 * stored; the key itself is printed once. A revoked key's row is deleted (its usage events keep
 * its name).
 */
export const m0006_gateway_keys = ddl`CREATE TABLE gateway_keys (
    name TEXT PRIMARY KEY,
    digest TEXT NOT NULL UNIQUE,
    models TEXT,
    daily_tokens INTEGER,
    expires_at INTEGER,
    created_at INTEGER NOT NULL
  ) WITHOUT ROWID`
