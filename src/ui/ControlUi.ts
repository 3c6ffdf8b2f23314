/**
 * The Control UI (docs/control-ui.md): a small web UI on loopback, served when config has `ui:`.
 * It is a step of the host stack after the channels: it reads the host's services and stores,
 * and binds the outbound channel of its own connection (`ui`), whose conversations are the web
 * chat's. Every response carries a strict Content-Security-Policy; every request must name a
 * loopback host (no DNS rebinding); every POST must come from this origin and, past the login,
 * carry the session's CSRF token; every page but the login needs a session.
 */
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as HttpIncomingMessage from "@effect/platform/HttpIncomingMessage"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Cause, Clock, Context, Deferred, Effect, Layer, Option, Schema } from "effect"
import * as http from "node:http"
import { ApprovalStore } from "../actions/ApprovalStore.js"
import { ReplyHub } from "../channels/http/replies.js"
import { resolvePublicUrl } from "../contracts/public-url.js"
import { HostConfig } from "../config/HostConfig.js"
import { readTokenHashes, tokenMatcher } from "../config/token-hashes.js"
import { UI_CONNECTION, type UiConfig } from "../config/ui.js"
import { DeliveryStore } from "../db/DeliveryStore.js"
import { MessageStore } from "../db/MessageStore.js"
import { Channels } from "../pipeline/Channels.js"
import { Ingest } from "../pipeline/Ingest.js"
import { Workspaces } from "../pipeline/Workspaces.js"
import { UI_CSS, UI_JS } from "./assets.js"
import { COOKIE, loopbackHost, sameOrigin, sameSecret, Sessions } from "./auth.js"
import { chatRoutes } from "./chat.js"
import { CurrentSession, PostedForm, UiFailure } from "./context.js"
import { html, htmlResponse } from "./html.js"
import { liveChanges } from "./live.js"
import { LoginLimiter } from "./login-limit.js"
import { page } from "./pages/layout.js"
import { loginPage } from "./pages/login.js"
import { pageRoutes } from "./routes.js"

/** The UI could not start (its tokens file, its port); `at` names the setting. */
export class ControlUiStartFailed extends Schema.TaggedError<ControlUiStartFailed>()("ControlUiStartFailed", {
  at: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `${this.at}: ${this.reason}`
  }
}

export const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

const SECURITY_HEADERS = {
  "content-security-policy": CSP,
  "x-content-type-options": "nosniff",
  // same-origin, not no-referrer: with no-referrer a browser posts forms with `Origin: null`.
  "referrer-policy": "same-origin",
  "x-frame-options": "DENY",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin"
}

const MAX_BODY = 1_048_576
const LoginForm = Schema.Struct({ token: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(4_096)) })

const plain = (status: number, text: string) => HttpServerResponse.text(text, { status })

export declare namespace ControlUi {
  export interface Service {
    /** Where it listens (with the port picked for `port: 0`). */
    readonly url: string
    /** The link the host hands out: `ui.publicUrl`'s (a tunnel's URL with `tunnel`), else `url`. */
    readonly link: string
  }
}

export class ControlUi extends Context.Tag("pynchy/ControlUi")<ControlUi, ControlUi.Service>() {
  static readonly make = (settings: UiConfig) =>
    Effect.gen(function* () {
      const { dataDir } = yield* HostConfig
      const match = tokenMatcher(yield* readTokenHashes("ui", settings, dataDir).pipe(
        Effect.mapError((e) => new ControlUiStartFailed({ at: e.at, reason: e.reason }))
      ))
      const sessions = new Sessions(settings.sessionMinutes * 60_000)
      const limiter = new LoginLimiter({ ...settings.loginLimits, windowMs: 60_000 })
      const hub = new ReplyHub()
      const live = yield* liveChanges
      const closing = yield* Deferred.make<void>()
      const channels = yield* Channels

      const chat = chatRoutes({
        ingest: yield* Ingest,
        deliveries: yield* DeliveryStore,
        messages: yield* MessageStore,
        workspaces: yield* Workspaces,
        hub,
        closing
      })
      const pages = yield* pageRoutes(live, closing).pipe(Effect.provide(ApprovalStore.layer))
      const router = HttpRouter.concat(chat, pages)
      /** The only responses served without a session. */
      const assets: Record<string, HttpServerResponse.HttpServerResponse> = {
        "/assets/ui.css": HttpServerResponse.text(UI_CSS, { contentType: "text/css; charset=utf-8" }),
        "/assets/ui.js": HttpServerResponse.text(UI_JS, { contentType: "text/javascript; charset=utf-8" })
      }

      let port = settings.port

      const login = (req: HttpServerRequest.HttpServerRequest) =>
        Effect.gen(function* () {
          if (req.method !== "POST") return htmlResponse(loginPage())
          const form = yield* req.urlParamsBody.pipe(
            Effect.flatMap((params) => Schema.decodeUnknown(LoginForm)(Object.fromEntries(params))),
            Effect.option
          )
          const now = yield* Clock.currentTimeMillis
          const client = Option.getOrElse(req.remoteAddress, () => "unknown")
          const attempt = limiter.attempt(client, now, () => Option.getOrUndefined(Option.flatMap(form, (f) => match(f.token))))
          if (attempt._tag === "Limited") {
            const seconds = Math.ceil(attempt.waitMs / 1_000)
            yield* Effect.logWarning("control ui: logins refused for a while").pipe(Effect.annotateLogs({ limit: attempt.scope, seconds }))
            const who = attempt.scope === "client" ? "from this address" : "from everyone together"
            return htmlResponse(loginPage(`Too many failed logins ${who}: try again in ${seconds} s.`), 429).pipe(
              HttpServerResponse.setHeader("retry-after", String(seconds))
            )
          }
          if (attempt._tag === "Refused") {
            yield* Effect.logWarning("control ui: a login was refused")
            return htmlResponse(loginPage("That token is not one of ui.tokens."), 401)
          }
          const session = sessions.create(attempt.tokenHash, now)
          yield* Effect.logInfo("control ui: logged in").pipe(Effect.annotateLogs({ user: session.user }))
          return HttpServerResponse.redirect("/chat", { status: 303 }).pipe(
            HttpServerResponse.unsafeSetCookie(COOKIE, session.id, { httpOnly: true, sameSite: "strict", path: "/" })
          )
        })

      const app = Effect.gen(function* () {
        const req = yield* HttpServerRequest.HttpServerRequest
        const host = req.headers["host"]
        if (!loopbackHost(host, port)) return plain(421, "this server answers to its loopback address only")
        const path = req.url.split("?")[0]!
        if (req.method === "POST" && !sameOrigin(req.headers["origin"], host)) return plain(403, "cross-origin POST refused")
        if (path === "/login") return yield* login(req)
        const asset = Object.hasOwn(assets, path) ? assets[path] : undefined
        if (asset !== undefined && req.method === "GET") return asset
        const session = sessions.get(req.cookies[COOKIE], yield* Clock.currentTimeMillis)
        if (Option.isNone(session)) {
          return req.method === "GET" && !path.endsWith("/stream") && path !== "/live"
            ? HttpServerResponse.redirect("/login", { status: 303 })
            : plain(401, "log in first")
        }
        let form: Record<string, string> = {}
        if (req.method === "POST") {
          form = Object.fromEntries(yield* req.urlParamsBody.pipe(Effect.orElseSucceed(() => [] as const)))
          if (!sameSecret(form["csrf"] ?? "", session.value.csrf)) return plain(403, "missing or wrong CSRF token: reload the page")
          if (path === "/logout") {
            sessions.drop(session.value.id)
            return HttpServerResponse.redirect("/login", { status: 303 }).pipe(
              HttpServerResponse.unsafeSetCookie(COOKIE, "", { httpOnly: true, sameSite: "strict", path: "/", maxAge: 0 })
            )
          }
        }
        return yield* router.pipe(
          Effect.provideService(CurrentSession, session.value),
          Effect.provideService(PostedForm, form)
        )
      }).pipe(
        HttpIncomingMessage.withMaxBodySize(Option.some(MAX_BODY)),
        Effect.catchTags({
          RouteNotFound: () => Effect.succeed(htmlResponse(page({ title: "Not found" }, html`<h1>Not found</h1><p><a href="/chat">Back</a></p>`), 404)),
          UiFailure: (f: UiFailure) => failure(f)
        }),
        Effect.catchAllCause((cause) =>
          Cause.isInterruptedOnly(cause)
            ? Effect.failCause(cause)
            : Effect.logError("control ui: request failed", cause).pipe(Effect.as(plain(500, "internal error (see the host log)")))
        ),
        Effect.map(HttpServerResponse.setHeaders(SECURITY_HEADERS)),
        Effect.map(HttpServerResponse.setHeader("cache-control", "no-store")),
        Effect.annotateLogs({ component: "control ui" })
      )

      const nodeServer = http.createServer()
      nodeServer.keepAliveTimeout = 5_000
      const server = yield* NodeHttpServer.make(() => nodeServer, { port: settings.port, host: settings.host }).pipe(
        Effect.mapError((e) => new ControlUiStartFailed({ at: "ui.port", reason: `cannot listen on ${settings.host}:${settings.port} (${(e.cause as NodeJS.ErrnoException | undefined)?.code ?? "error"})` }))
      )
      // Open streams end and open connections are cut before the server's own close, or an SSE
      // client would hold the close forever.
      yield* Effect.addFinalizer(() => Deferred.succeed(closing, undefined).pipe(Effect.zipRight(Effect.sync(() => nodeServer.closeAllConnections()))))
      yield* server.serve(app)
      if (server.address._tag === "TcpAddress") port = server.address.port
      const url = `http://${settings.host === "::1" ? "[::1]" : settings.host}:${port}/`

      const unbind = yield* channels.bind({
        name: UI_CONNECTION,
        // Replies are read from the deliveries table: sending again changes nothing.
        idempotentResends: true,
        send: (delivery) => {
          hub.delivered(delivery.place)
          return Promise.resolve()
        },
        progress: (event) => hub.progress(event)
      })
      yield* Effect.addFinalizer(() => unbind)
      // The link to open: the public one when `publicUrl` says (a tunnel's), else where it listens.
      const link = `${yield* resolvePublicUrl(settings.publicUrl, url, "ui.publicUrl")}/`
      yield* Effect.logInfo("control ui listening").pipe(Effect.annotateLogs({ url, link }))
      return ControlUi.of({ url, link })
    })

  /** Off (nothing listens) unless config has `ui:`. */
  static readonly layer = Layer.unwrapEffect(
    Effect.map(HostConfig, ({ config }) =>
      config.ui === undefined ? Layer.empty : Layer.scopedDiscard(ControlUi.make(config.ui)))
  )
}

const failure = (f: UiFailure) =>
  Effect.map(HttpServerRequest.HttpServerRequest, (req) =>
    (req.headers["accept"] ?? "").includes("application/json")
      ? HttpServerResponse.unsafeJson({ error: f.status, message: f.reason }, { status: f.status })
      : htmlResponse(page({ title: "Error" }, html`<h1>${f.status === 404 ? "Not found" : "Not done"}</h1><p class="error" role="alert">${f.reason}</p><p><a href="/chat">Back</a></p>`), f.status))
