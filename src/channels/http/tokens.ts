/**
 * Who a bearer token of the HTTP API is: its client id (stored with its messages; replies and
 * places are scoped to it) and its name (the sender of its messages). The client id is derived
 * from the token's digest, never the digest itself; a token configured without a name is named
 * `token-` + the first 8 characters of its client id, which stays the same across restarts.
 */
import { createHash } from "node:crypto"

export interface TokenIdentity {
  readonly tokenHash: string
  readonly client: string
  readonly name: string
}

/** The id stored with a token's messages (metadata `client`). */
export const clientOf = (tokenHash: string) => createHash("sha256").update(`pynchy-http-client\u0000${tokenHash}`).digest("hex").slice(0, 32)

/** Each configured digest's identity: the names given in `tokens`, the derived name for the others. */
export const identities = (hashes: ReadonlyArray<string>, tokens: ReadonlyArray<string | { readonly hash: string; readonly name: string }>): Map<string, TokenIdentity> => {
  const named = new Map(tokens.flatMap((t) => (typeof t === "string" ? [] : [[t.hash, t.name] as const])))
  return new Map(hashes.map((tokenHash) => {
    const client = clientOf(tokenHash)
    return [tokenHash, { tokenHash, client, name: named.get(tokenHash) ?? `token-${client.slice(0, 8)}` }]
  }))
}

/** The digests of the `tokens` setting (named or not). */
export const hashesOf = (tokens: ReadonlyArray<string | { readonly hash: string }>): ReadonlyArray<string> =>
  tokens.map((t) => (typeof t === "string" ? t : t.hash))
