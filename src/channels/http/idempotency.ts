/**
 * Idempotency keys of the HTTP API. A key is scoped to the token that sent it and the place it was
 * posted to: the receipt's provider event id is a digest of (token hash, place, key), so two
 * clients (or two places) that pick the same key never share a receipt.
 *
 * A key names one message. The digest of its body (sender, text) is committed in the same
 * transaction as the receipt, as the cursor of a stream named after the receipt: the durable,
 * per-connection record the ingest contract already offers. A retry whose body digest matches is a
 * duplicate; one that does not is a reused key, answered 409, and nothing is written.
 */
import { createHash } from "node:crypto"

const sha256 = (value: string): string => createHash("sha256").update(value, "utf8").digest("hex")

/**
 * The provider event id of a keyed POST. The `key:` prefix keeps these apart from the ids of
 * earlier versions (`idem:<key>`, whose key could be any visible text) and from unkeyed posts (`anon:`).
 */
export const keyedEventId = (tokenHash: string, place: string, key: string): string =>
  `key:${sha256(JSON.stringify([tokenHash, place, key]))}`

/** What must match for a retry to be the same message. */
export const bodyDigest = (body: { readonly sender: string; readonly text: string }): string =>
  sha256(JSON.stringify([body.sender, body.text]))

/** Cursors only move forward: a constant order makes the first commit's digest final. */
export const DIGEST_ORDER = 1
