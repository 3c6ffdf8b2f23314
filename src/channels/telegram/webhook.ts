/**
 * The listener of a Telegram connection in `mode: webhook`: an @effect/platform HTTP server on
 * `webhook.listen` that takes the updates Telegram POSTs to `webhook.url` (through the operator's
 * reverse proxy), one JSON update per request.
 *
 *   POST <path>  X-Telegram-Bot-Api-Secret-Token: <secret>   {update_id, message, ...}
 *     -> 200 once `onUpdate` succeeded (the runtime's ingest committed, or it skipped the update)
 *     -> 401 when the secret header is missing or wrong (nothing is read or stored)
 *     -> 400 for a body that is not a JSON update (no integer update_id)
 *     -> 413 for a body over `webhook.maxBodyBytes`
 *     -> 500 when `onUpdate` failed (Telegram delivers the update again later)
 *     -> 404 for another path, 405 for another method
 *
 * A failure of one request never stops the listener; an interrupted request (the host closing)
 * gets no answer, so Telegram delivers that update again.
 */
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import { Cause, Config, Data, Effect, Either, Redacted } from "effect"
import { createHash, timingSafeEqual } from "node:crypto"
import * as fs from "node:fs/promises"
import * as http from "node:http"
import * as path from "node:path"
import { BodyTooLarge, readBody } from "../http/body.js"
import { webhookPath, type TelegramWebhookSettings } from "./settings.js"
import { hasUpdateId } from "./updates.js"

/** `reason` names the setting at fault (`connections.<name>.webhook.…`). */
export class WebhookError extends Data.TaggedError("WebhookError")<{ readonly reason: string }> {}

export const SECRET_HEADER = "x-telegram-bot-api-secret-token"
/** What Telegram accepts as `secret_token`. */
const SECRET_FORMAT = /^[A-Za-z0-9_-]{1,256}$/

/** The webhook secret: from `secretTokenEnv` (through Config) or `secretTokenFile` (relative to dataDir), in Telegram's format. */
export const readSecret = (name: string, webhook: TelegramWebhookSettings, dataDir: string): Effect.Effect<string, WebhookError> => {
  const at = `connections.${name}.webhook.${webhook.secretTokenEnv !== undefined ? "secretTokenEnv" : "secretTokenFile"}`
  const read = webhook.secretTokenEnv !== undefined
    ? Config.redacted(webhook.secretTokenEnv).pipe(
      Effect.map(Redacted.value),
      Effect.mapError(() => new WebhookError({ reason: `${at}: ${webhook.secretTokenEnv} is not set` }))
    )
    : Effect.tryPromise({
      try: () => fs.readFile(path.resolve(dataDir, webhook.secretTokenFile ?? ""), "utf8"),
      catch: () => new WebhookError({ reason: `${at}: cannot read the file` })
    })
  return read.pipe(
    Effect.map((s) => s.trim()),
    Effect.filterOrFail((s) => SECRET_FORMAT.test(s), () => new WebhookError({ reason: `${at}: the secret must be 1-256 characters A-Z, a-z, 0-9, _ or -` }))
  )
}

const digest = (s: string) => createHash("sha256").update(s, "utf8").digest()

const plain = (status: number, text: string, headers: Record<string, string> = {}) =>
  HttpServerResponse.text(text, { status, headers: { "cache-control": "no-store", ...headers } })

/**
 * Listens on `webhook.listen` in the caller's scope (closed with it) and hands each authenticated
 * update to `onUpdate`; the answer waits for it. Fails when the port cannot be bound.
 */
export const listen = <E extends { readonly message: string }>(options: {
  readonly name: string
  readonly webhook: TelegramWebhookSettings
  readonly secret: string
  readonly onUpdate: (update: unknown) => Effect.Effect<void, E>
}) =>
  Effect.gen(function* () {
    const { name, onUpdate, webhook } = options
    const expected = digest(options.secret)
    const route = webhookPath(webhook)
    const authentic = (given: string | undefined) => given !== undefined && timingSafeEqual(digest(given), expected)

    const app = Effect.gen(function* () {
      const req = yield* HttpServerRequest.HttpServerRequest
      if (new URL(req.url, "http://listener").pathname !== route) return plain(404, "not found")
      if (req.method !== "POST") return plain(405, "method not allowed", { allow: "POST" })
      if (!authentic(req.headers[SECRET_HEADER])) {
        yield* Effect.logWarning("telegram webhook: request refused (wrong or missing secret token)")
        return plain(401, "unauthorized")
      }
      const body = yield* Effect.either(readBody(NodeHttpServerRequest.toIncomingMessage(req), webhook.maxBodyBytes))
      if (Either.isLeft(body)) {
        return body.left instanceof BodyTooLarge
          ? plain(413, `payload too large (the limit is ${webhook.maxBodyBytes} bytes)`, { connection: "close" })
          : plain(400, "unreadable body")
      }
      let update: unknown
      try {
        update = JSON.parse(body.right)
      } catch {
        return plain(400, "the body is not JSON")
      }
      if (!hasUpdateId(update)) return plain(400, "the body is not a Telegram update (no integer update_id)")
      const done = yield* Effect.either(onUpdate(update))
      if (Either.isLeft(done)) {
        yield* Effect.logWarning("telegram webhook: update not taken; Telegram will deliver it again").pipe(Effect.annotateLogs({ reason: done.left.message }))
        return plain(500, "not stored; deliver again")
      }
      return HttpServerResponse.empty({ status: 200 })
    }).pipe(
      Effect.catchAllCause((cause) =>
        Cause.isInterruptedOnly(cause)
          ? Effect.failCause(cause)
          : Effect.logError("telegram webhook: request failed", cause).pipe(Effect.as(plain(500, "internal error")))
      ),
      Effect.annotateLogs({ connection: name })
    )

    const nodeServer = http.createServer()
    nodeServer.keepAliveTimeout = 5_000
    const server = yield* NodeHttpServer.make(() => nodeServer, { port: webhook.listen.port, host: webhook.listen.host }).pipe(
      Effect.mapError((e) =>
        new WebhookError({
          reason: `connections.${name}.webhook.listen: cannot listen on ${webhook.listen.host}:${webhook.listen.port} (${(e.cause as NodeJS.ErrnoException | undefined)?.code ?? "error"})`
        })
      )
    )
    // Runs before the server's own close: connections still open are cut, so the close cannot hang.
    yield* Effect.addFinalizer(() => Effect.sync(() => nodeServer.closeAllConnections()))
    yield* server.serve(app)
    yield* Effect.logInfo("telegram webhook listening").pipe(Effect.annotateLogs({ connection: name, host: webhook.listen.host, port: webhook.listen.port, path: route }))
  })
