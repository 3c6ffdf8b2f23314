/**
 * How many connections a client may hold, counted two ways (issue 34, finding 2: one sandbox held
 * all 256 connections idle, and every other workspace's turn failed to reach the gateway).
 *
 * - Per listener, at accept: each sandbox has a socket of its own with its own count
 *   (`limits.connectionsPerSandbox`), and the shared listeners (`<dataDir>/gateway.sock`, TCP) one
 *   between them (`limits.maxConnections`). A connection over its listener's cap is closed before
 *   the HTTP parser or any request state exists for it. An idle connection carries no token, so
 *   the listener it came through is the only thing that says whose it is.
 * - Per token, at the first request a connection carries for it (`limits.connectionsPerToken`):
 *   the connection is the token's until it closes or carries another token's request. A request
 *   that would give a token one connection more than its cap gets 429 and the connection is closed.
 *
 * Idle and half-sent connections are closed by the server's own timeouts (Gateway.ts).
 */
import type * as http from "node:http"
import type * as net from "node:net"
import type { Grant } from "./tokens.js"

/** A `connection` listener that closes connections beyond `max` open at once on its server(s). */
export const connectionCap = (max: number) => {
  let open = 0
  const onConnection = (socket: net.Socket) => {
    if (open >= max) return void socket.destroy()
    open++
    socket.once("close", () => open--)
  }
  return { onConnection, get open() { return open } }
}

const OWNER = Symbol("pynchy.gateway.owner")

type Owned = net.Socket & { [OWNER]?: Grant | undefined }

/**
 * Connections per grant. A connection is checked only when it carries a request for a grant it
 * was not already counted for, so the kept-alive path costs one property read.
 */
export class TokenConnections {
  private readonly counts = new WeakMap<Grant, number>()

  constructor(private readonly max: number) {}

  /** Counts `socket` for `grant`; false when that would exceed the cap (the socket is left as it was). */
  attach(grant: Grant, socket: net.Socket): boolean {
    const s = socket as Owned
    const owner = s[OWNER]
    if (owner === grant) return true
    const n = this.counts.get(grant) ?? 0
    if (n >= this.max) return false
    this.counts.set(grant, n + 1)
    if (owner === undefined) s.once("close", () => this.release(s))
    else this.counts.set(owner, (this.counts.get(owner) ?? 1) - 1)
    s[OWNER] = grant
    return true
  }

  /** Connections `grant` holds now. */
  of(grant: Grant): number {
    return this.counts.get(grant) ?? 0
  }

  private release(s: Owned): void {
    const owner = s[OWNER]
    if (owner !== undefined) this.counts.set(owner, (this.counts.get(owner) ?? 1) - 1)
    s[OWNER] = undefined
  }
}

/** The node:http server options every gateway listener shares: the header, request and idle timeouts. */
export const serverOptions = (limits: { readonly headersTimeoutMs: number; readonly requestTimeoutMs: number; readonly idleTimeoutMs: number }): http.ServerOptions => ({
  headersTimeout: limits.headersTimeoutMs,
  requestTimeout: limits.requestTimeoutMs,
  keepAliveTimeout: limits.idleTimeoutMs,
  // Node checks the header and request deadlines on this period (30 s by default, which would let
  // a 10 s header timeout run to 40 s): a quarter of the header timeout, within 50 ms..1 s.
  connectionsCheckingInterval: Math.max(50, Math.min(1_000, Math.floor(limits.headersTimeoutMs / 4)))
})
