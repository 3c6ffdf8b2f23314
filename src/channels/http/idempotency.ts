/**
 * Idempotency keys of the HTTP API. A key is scoped to the token that sent it and the place it was
 * posted to: the receipt's provider event id is a digest of (token hash, place, key), so two
 * clients (or two places) that pick the same key never share a receipt.
 *
 * A key names one message. The digest of its body (sender, text, files) is the receipt's fingerprint,
 * committed with it in the ingest transaction: a retry whose digest matches is a duplicate; one that
 * does not is an ingest conflict (a reused key), answered 409, and nothing is written.
 */
import { createHash } from "node:crypto"

const sha256 = (value: string): string => createHash("sha256").update(value, "utf8").digest("hex")

/**
 * The provider event id of a keyed POST. The `key:` prefix keeps these apart from the ids of
 * earlier versions (`idem:<key>`, whose key could be any visible text) and from unkeyed posts (`anon:`).
 */
export const keyedEventId = (tokenHash: string, place: string, key: string): string =>
  `key:${sha256(JSON.stringify([tokenHash, place, key]))}`

/**
 * The receipt's fingerprint: what must match for a retry to be the same message. Files count by
 * name, type and a digest of their bytes; a body without files digests as it always did.
 */
export const bodyDigest = (body: { readonly sender: string; readonly text: string; readonly files?: ReadonlyArray<{ readonly name: string; readonly type: string; readonly digest: string }> }): string =>
  sha256(JSON.stringify(body.files === undefined ? [body.sender, body.text] : [body.sender, body.text, body.files.map((f) => [f.name, f.type, f.digest])]))
