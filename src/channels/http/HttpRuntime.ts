/**
 * The HTTP API connection: a loopback server that ingests posted messages durably and serves the
 * replies of each conversation (a list and an SSE stream) from the deliveries table. It is an
 * Effect-native connection runtime (src/contracts/native-runtime.ts) on @effect/platform's
 * HttpServer: it listens in the runtime's scope and binds the outbound channel of its connection.
 *
 *   POST /v1/conversations/{place}/messages   {text, sender?, files?: [{name, type?, base64}]}   Idempotency-Key: <key>
 *        -> 202 {messageId, conversationId, duplicate}, only after the ingest committed
 *        -> 409 {error: "idempotency_key_reused"} when this token used the key in this place for another body
 *        -> 413 {error: "payload_too_large"} (after the body was read, so the client sees it)
 *   GET  /v1/conversations/{place}/replies?after=<id>  -> 200 {replies: [{id, key, kind, text, at}]}
 *   GET  /v1/conversations/{place}/replies/{id}/audio -> the audio of a spoken reply (audio/wav)
 *   GET  /v1/conversations/{place}/replies/{id}/files/{n} -> file n of a reply (the agent's outbox)
 *   GET  /v1/conversations/{place}/stream             -> text/event-stream, `event: reply`
 *        (with an id), and `event: delta` (streamed text of the reply to come; no id, not replayed)
 *
 * Every request needs `Authorization: Bearer <token>` whose SHA-256 is configured (401, no detail,
 * otherwise). A token reads the replies to its own messages only. Bad input gets 400
 * `{error: "invalid_request", problems: [{path, reason}]}`.
 */
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Cause, Data, Deferred, Effect, Option } from "effect"
import * as http from "node:http"
import type { Duplex } from "node:stream"
import { FilesConfig } from "../../config/files.js"
import { readTokenHashes, tokenMatcher } from "../../config/token-hashes.js"
import { DeliveryStore } from "../../db/DeliveryStore.js"
import { ChannelSendFailed, nativeChannel } from "../../contracts/channel.js"
import { native, type NativeConnectionRuntime } from "../../contracts/native-runtime.js"
import { resolvePublicUrl } from "../../contracts/public-url.js"
import { PlaceOwnerStore } from "../../db/PlaceOwnerStore.js"
import { Caller, HttpFailure, json, makeRouter } from "./api.js"
import { ReplyHub } from "./replies.js"
import type { HttpSettings } from "./settings.js"
import { hashesOf, identities } from "./tokens.js"

export class HttpRuntimeError extends Data.TaggedError("HttpRuntimeError")<{ readonly message: string }> {}

export interface HttpRuntimeOptions {
  readonly name: string
  readonly settings: HttpSettings
  /** tokensFile is relative to it. */
  readonly dataDir: string
  /** `files:` of pynchy.yaml (default: its defaults). */
  readonly files?: FilesConfig
}

export interface HttpRuntime extends NativeConnectionRuntime {
  /** The port it listens on, once started (useful with `port: 0`). */
  port(): number | undefined
}

export const makeHttpRuntime = (options: HttpRuntimeOptions): HttpRuntime => {
  const { name, settings } = options
  let port: number | undefined
  let listening = false

  const readTokens = readTokenHashes(`connections.${name}`, { tokens: hashesOf(settings.tokens), tokensFile: settings.tokensFile }, options.dataDir).pipe(
    Effect.mapError((e) => new HttpRuntimeError({ message: e.message }))
  )

  const runtime = native({
    name,
    start: (context) =>
      Effect.gen(function* () {
        const hashes = yield* readTokens
        const match = tokenMatcher(hashes)
        const callers = identities(hashes, settings.tokens)
        /** The configured hash of the bearer token, or none. */
        const authenticate = (authorization: string | undefined) =>
          authorization === undefined || !authorization.startsWith("Bearer ") ? Option.none<string>() : match(authorization.slice("Bearer ".length).trim())
        const deliveries = yield* DeliveryStore
        const owners = yield* PlaceOwnerStore
        const hub = new ReplyHub()
        const closing = yield* Deferred.make<void>()
        // Audio URLs are paths of this server unless `publicUrl` gives their base.
        const baseUrl = settings.publicUrl === undefined ? undefined : yield* resolvePublicUrl(settings.publicUrl, "", `connections.${name}.publicUrl`)
        const router = makeRouter({ name, settings, context, deliveries, owners, hub, closing, files: options.files ?? FilesConfig.make({}), ...(baseUrl !== undefined ? { baseUrl } : {}) })

        const app = Effect.gen(function* () {
          const req = yield* HttpServerRequest.HttpServerRequest
          const tokenHash = authenticate(req.headers["authorization"])
          if (Option.isNone(tokenHash)) return json(401, { error: "unauthorized" }, { "www-authenticate": "Bearer" })
          return yield* router.pipe(
            Effect.provideService(Caller, callers.get(tokenHash.value)!),
            Effect.catchTag("RouteNotFound", () => Effect.succeed(json(404, { error: "not_found" })))
          )
        }).pipe(
          Effect.catchTag("HttpFailure", (f: HttpFailure) => Effect.succeed(json(f.status, f.body, f.headers))),
          Effect.catchAllCause((cause) =>
            Cause.isInterruptedOnly(cause)
              ? Effect.failCause(cause)
              : Effect.logError("http api: request failed", cause).pipe(Effect.as(json(500, { error: "internal" })))
          ),
          Effect.annotateLogs({ connection: name })
        )

        const nodeServer = http.createServer()
        nodeServer.keepAliveTimeout = 5_000
        // Node hands CONNECT to a 'connect' listener and, without one, closes the socket with no
        // answer: the API has no tunnels, and says so with a status line.
        nodeServer.on("connect", (_req: http.IncomingMessage, socket: Duplex) => {
          socket.on("error", () => {})
          const body = JSON.stringify({ error: "method_not_allowed" })
          socket.end(`HTTP/1.1 405 Method Not Allowed\r\nallow: GET, POST\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`)
        })
        const server = yield* NodeHttpServer.make(() => nodeServer, { port: settings.port, host: settings.host }).pipe(
          Effect.mapError((e) => new HttpRuntimeError({ message: `connections.${name}.port: cannot listen on ${settings.host}:${settings.port} (${(e.cause as NodeJS.ErrnoException | undefined)?.code ?? "error"})` }))
        )
        // Runs before the server's own close (finalizers run in reverse): open streams end, and
        // connections still open are cut, or an SSE client would hold the close forever.
        yield* Effect.addFinalizer(() =>
          Deferred.succeed(closing, undefined).pipe(Effect.zipRight(Effect.sync(() => {
            listening = false
            nodeServer.closeAllConnections()
          })))
        )
        yield* server.serve(app)
        port = server.address._tag === "TcpAddress" ? server.address.port : undefined

        const channel = nativeChannel({
          name,
          // Replies are read from the deliveries table: sending again changes nothing.
          idempotentResends: true,
          // A spoken reply's audio is stored before this send (src/speech): the replies list its URL.
          audio: "wav",
          // A reply's files (the agent's outbox) are stored before this send: the replies list their URLs.
          files: true,
          send: (delivery) =>
            Effect.suspend(() => {
              if (!listening) return Effect.fail(new ChannelSendFailed({ reason: `http connection '${name}' is closed`, outcomeUnknown: false }))
              hub.delivered(delivery.place)
              return Effect.void
            }),
          progress: (event) => Effect.sync(() => hub.progress(event))
        })
        yield* context.bindChannel(channel)
        listening = true
        yield* Effect.logInfo("http api listening").pipe(Effect.annotateLogs({ connection: name, host: settings.host, port }))
      }),
    isReady: Effect.sync(() => listening)
  })
  return Object.assign(runtime, { port: () => port })
}
