/**
 * Logins of the Control UI. A token (whose SHA-256 digest is configured) is posted once to
 * /login; the answer sets a random session id in an HttpOnly, SameSite=Strict cookie. Each
 * session has its own CSRF token, which every POST must carry in its form (checked with the
 * Origin header). Sessions live in memory: a restart of the host logs everyone out.
 */
import { Option } from "effect"
import { createHash, randomBytes, timingSafeEqual } from "node:crypto"

export const COOKIE = "pynchy_ui"

export interface Session {
  readonly id: string
  readonly csrf: string
  readonly tokenHash: string
  /** Who decided, in `decidedBy` and as a message's sender: derived from the token's digest, never the digest. */
  readonly user: string
  expiresAt: number
}

/** `ui:` and 8 hex digits derived from the token's digest (stable across logins and restarts). */
export const userOf = (tokenHash: string): string =>
  `ui:${createHash("sha256").update(`pynchy-ui-user\u0000${tokenHash}`).digest("hex").slice(0, 8)}`

const random = () => randomBytes(32).toString("base64url")

export const sameSecret = (a: string, b: string): boolean => {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && timingSafeEqual(x, y)
}

export class Sessions {
  private readonly byId = new Map<string, Session>()
  constructor(private readonly ttlMs: number) {}

  create(tokenHash: string, now: number): Session {
    const session: Session = { id: random(), csrf: random(), tokenHash, user: userOf(tokenHash), expiresAt: now + this.ttlMs }
    this.byId.set(session.id, session)
    for (const [id, s] of this.byId) if (s.expiresAt <= now) this.byId.delete(id)
    return session
  }

  /** The live session of a cookie value; using it extends it. */
  get(id: string | undefined, now: number): Option.Option<Session> {
    const session = id === undefined ? undefined : this.byId.get(id)
    if (session === undefined) return Option.none()
    if (session.expiresAt <= now) {
      this.byId.delete(session.id)
      return Option.none()
    }
    session.expiresAt = now + this.ttlMs
    return Option.some(session)
  }

  drop(id: string): void {
    this.byId.delete(id)
  }
}

/** The Host header names this server on a loopback name (a DNS-rebinding page gets its own name refused). */
export const loopbackHost = (host: string | undefined, port: number): boolean =>
  host !== undefined && [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`].includes(host.toLowerCase())

/** A POST's Origin is this server itself. */
export const sameOrigin = (origin: string | undefined, host: string | undefined): boolean =>
  origin !== undefined && host !== undefined && origin.toLowerCase() === `http://${host.toLowerCase()}`
