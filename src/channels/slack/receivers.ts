/**
 * How Slack's events reach the bolt App, in the two modes, with the ack after the commit:
 *
 * - Socket Mode: a `SocketModeClient` (the client bolt's own SocketModeReceiver uses) opened by
 *   the runtime's loop, one connection at a time. Bolt acks an Events API envelope before its
 *   listeners run; here the App gets a no-op ack and the envelope is acked only once
 *   `processEvent` resolved, i.e. once the message is committed. A failed ingest is not acked,
 *   so Slack delivers the event again.
 * - HTTP: bolt's `HTTPReceiver`, which verifies each request's signature (HMAC-SHA256 of the body
 *   with the signing secret; 401 otherwise), with `processBeforeResponse`, so the 200 goes out
 *   after the listener committed; a failure answers 500 and Slack retries. Bolt refuses only a
 *   timestamp more than 5 minutes in the past; `checkSkew` refuses one more than 5 minutes either
 *   way, before bolt handles the request, so a signed request held back and replayed from the
 *   future is refused too.
 *
 * Bolt and the socket client log through `boltLogger`: warnings and errors become the host's
 * warnings (their texts name no content at those levels); debug and info, which may print
 * payloads, are dropped.
 */
import type * as Bolt from "@slack/bolt"
import type { SocketModeClient } from "@slack/socket-mode"
import { type Clock, Effect, Runtime } from "effect"
import type * as http from "node:http"

/** How far a request's `x-slack-request-timestamp` may be from the host's clock, either way (Slack's recipe). */
export const MAX_SKEW_SECONDS = 5 * 60

/**
 * Wraps an HTTPReceiver's request listener: a request whose timestamp is more than
 * MAX_SKEW_SECONDS from `clock`'s time, in the past or the future, gets 401 and is not handled.
 * A missing or malformed timestamp is left to bolt (which refuses it).
 */
export const checkSkew = (receiver: Bolt.HTTPReceiver, clock: Clock.Clock) => {
  const handle = receiver.requestListener
  receiver.requestListener = (req: http.IncomingMessage, res: http.ServerResponse) => {
    const header = req.headers["x-slack-request-timestamp"]
    const timestamp = typeof header === "string" && /^\d{1,12}$/.test(header) ? Number(header) : undefined
    if (timestamp !== undefined && Math.abs(clock.unsafeCurrentTimeMillis() / 1000 - timestamp) > MAX_SKEW_SECONDS) {
      res.writeHead(401)
      res.end()
      return
    }
    return handle(req, res)
  }
  return receiver
}

/** A bolt/socket-mode `Logger` writing warnings and errors to the host's log. */
export const boltLogger = (runtime: Runtime.Runtime<never>, connection: string) => {
  const log = (level: "warn" | "error") => (...msg: Array<unknown>) =>
    Runtime.runFork(runtime)(
      Effect.logWarning(`slack ${level}: ${msg.map((m) => (m instanceof Error ? m.message : typeof m === "string" ? m : "")).join(" ").slice(0, 300)}`).pipe(
        Effect.annotateLogs({ connection })
      )
    )
  let level = "warn"
  return {
    debug: () => {},
    info: () => {},
    warn: log("warn"),
    error: log("error"),
    setLevel: (l: string) => void (level = l),
    getLevel: () => level,
    setName: () => {}
  } as unknown as Bolt.Logger
}

/** A bolt Receiver that hands the App what the runtime's socket client received; start/stop are the runtime's. */
export class SocketBridge implements Bolt.Receiver {
  private app: Bolt.App | undefined
  init(app: Bolt.App) {
    this.app = app
  }
  start() {
    return Promise.resolve()
  }
  stop() {
    return Promise.resolve()
  }
  /** Wires a socket client's envelopes to the App: Events API envelopes acked after processing, others acked and ignored. */
  attach(client: SocketModeClient, onMalformed: () => void) {
    // socket-mode 3.1 reads `payload.event.type` of every events_api envelope unguarded: a
    // malformed one would be an unhandled rejection. Its frames pass through this guard, and one
    // it cannot handle is acked (Slack would only send it again) and reported.
    const [handler] = client.listeners("ws_message") as Array<(data: unknown, isBinary: boolean) => Promise<void>>
    if (handler !== undefined) {
      client.removeAllListeners("ws_message")
      client.on("ws_message", (data: unknown, isBinary: boolean) => {
        handler.call(client, data, isBinary).catch(() => {
          onMalformed()
          const id = envelopeIdOf(data)
          if (id !== undefined) (client as unknown as { send: (id: string) => Promise<void> }).send(id).catch(() => undefined)
        })
      })
    }
    client.on("slack_event", async (args: { ack: () => Promise<void>; type: string; body: Record<string, unknown>; retry_num?: number; retry_reason?: string }) => {
      if (args.type !== "events_api" || this.app === undefined) return args.ack().catch(() => undefined)
      try {
        await this.app.processEvent({
          body: args.body ?? {},
          ack: () => Promise.resolve(),
          ...(args.retry_num !== undefined ? { retryNum: args.retry_num } : {}),
          ...(args.retry_reason !== undefined ? { retryReason: args.retry_reason } : {})
        })
      } catch {
        // Not committed: no ack, so Slack delivers it again (the failure was logged by the App's error handler).
        return
      }
      await args.ack().catch(() => undefined)
    })
  }
}

const envelopeIdOf = (data: unknown): string | undefined => {
  try {
    const text = typeof data === "string" ? data : new TextDecoder().decode(data as ArrayBuffer)
    const id = (JSON.parse(text) as { envelope_id?: unknown }).envelope_id
    return typeof id === "string" ? id : undefined
  } catch {
    return undefined
  }
}
