/**
 * One admitted request as the pieces of the data path share it: what the client asked, what
 * admission reserved, and the attempt in progress. Mutable on purpose: it is the request's only
 * state, touched from node callbacks and at most one retry fiber, never concurrently.
 */
import type { Fiber } from "effect"
import type * as http from "node:http"
import type { Api, Group } from "./catalog.js"
import type { UsageEvent } from "./events.js"
import type { Grant } from "./tokens.js"

export interface Ctx {
  readonly api: Api
  readonly req: http.IncomingMessage
  readonly res: http.ServerResponse
  readonly grant: Grant
  readonly model: string
  readonly chain: ReadonlyArray<Group>
  readonly stream: boolean
  readonly parsed: Record<string, unknown>
  readonly raw: Buffer
  readonly rewritten: boolean
  readonly tried: Set<string>
  readonly received: number
  /** Tokens held against the budgets until `account` settles them. */
  readonly reserved: number
  accounted: boolean
  /** Tokens charged so far (by `account`). */
  charged: number
  /** Attempts sent so far (a deployment picked). */
  attempts: number
  /** An attempt is with the upstream (it may be spending tokens). */
  live: boolean
  /** Set when the client left or the token was revoked: whether an attempt was live then. */
  cut: boolean | undefined
  upReq: http.ClientRequest | undefined
  bodies: Map<string, Buffer> | undefined
  /** The retry fiber, once a first attempt failed. */
  fiber: Fiber.RuntimeFiber<void> | undefined
}

/** How a request ended, as its usage event says. */
export type Outcome = UsageEvent["outcome"]

/** A log line of the data path, written by a forked fiber (masked by `gatewayLog`). */
export type Log = (level: "Warning" | "Info" | "Debug", message: string, fields: Record<string, unknown>) => void
