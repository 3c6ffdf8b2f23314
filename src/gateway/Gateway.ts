import { Context, Effect, Layer, PubSub, Redacted, Schema } from "effect"
import type { Queue, Scope } from "effect"
import * as fs from "node:fs"
import * as http from "node:http"
import * as net from "node:net"
import * as path from "node:path"
import { HostConfig } from "../config/HostConfig.js"
import type { ProviderConfig } from "../config/schema.js"
import { Budgets } from "./budgets.js"
import { type GatewayConfigInvalid, resolveCatalog } from "./catalog.js"
import { GatewayConfig, type RoutingStrategy } from "../config/gateway.js"
import { connectionCap, serverOptions } from "./connections.js"
import { makeDataPath } from "./data-path.js"
import { Deadlines } from "./deadlines.js"
import type { GatewayEvent } from "./events.js"
import { gatewayLog } from "./redact.js"
import { type DeploymentStatus, Router } from "./router.js"
import { keyAccount, type KeyRecord } from "./keys.js"
import { TokenTable } from "./tokens.js"

/** The gateway could not listen where it was told to. */
export class GatewayListenFailed extends Schema.TaggedError<GatewayListenFailed>()("GatewayListenFailed", {
  address: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `gateway cannot listen on ${this.address}: ${this.reason}`
  }
}

export declare namespace GatewaySettings {
  export interface Service {
    /** `<dataDir>/gateway.sock` is the shared socket (sandboxes get their own: `listenForSandbox`). */
    readonly dataDir: string
    readonly providers: ReadonlyArray<ProviderConfig>
    readonly gateway: GatewayConfig
  }
}

/** What the gateway is built from; `layerHost` reads it from the host config. */
export class GatewaySettings extends Context.Tag("pynchy/GatewaySettings")<GatewaySettings, GatewaySettings.Service>() {
  static readonly layerFrom = (settings: GatewaySettings.Service) => Layer.succeed(GatewaySettings, settings)

  /** The host config's providers and `gateway:` section, with the data dir for the socket. */
  static readonly layerHost = Layer.effect(
    GatewaySettings,
    Effect.map(HostConfig, (host) => ({
      dataDir: host.dataDir,
      providers: host.config.providers,
      gateway: host.config.gateway
    }))
  )
}


export declare namespace Gateway {
  export interface MintInput {
    readonly workspace: string
    readonly conversationId: string
    /** The turn the token is for: its usage events carry it, so spend is known per turn. */
    readonly turnId?: number
    /** Public model names the token may use; all when absent. */
    readonly models?: ReadonlyArray<string>
    /** Epoch millis (the turn's deadline), on the Effect Clock. */
    readonly expiresAt: number
    /** Tokens this turn may spend in total. */
    readonly tokenBudget?: number
    /** The turn's W3C trace context: each upstream attempt is a span under it and sends its own `traceparent`. */
    readonly traceparent?: string | null
  }

  export interface Minted {
    readonly token: Redacted.Redacted<string>
    /** Revokes the token; idempotent. */
    readonly revoke: Effect.Effect<void>
  }

  export interface Status {
    readonly socketPath: string | null
    readonly url: string | null
    readonly strategy: RoutingStrategy
    readonly activeTokens: number
    readonly deployments: ReadonlyArray<DeploymentStatus>
    /** Per-workspace tokens spent today (UTC), held by requests in flight, and the daily limit. */
    readonly usageToday: Record<string, { used: number; reserved: number; limit: number | null }>
  }

  /**
   * The LLM gateway: OpenAI (`/v1/chat/completions`, `/v1/responses`), Anthropic (`/v1/messages`)
   * and `/v1/models` on a unix socket (and optionally 127.0.0.1), authenticated by turn tokens.
   */
  export interface Service {
    /** Host path of the socket, or null when socket listening is off. */
    readonly socketPath: string | null
    /** `http://127.0.0.1:<port>` when listening on TCP. */
    readonly url: string | null
    /**
     * A socket of one sandbox's own at `file` (mode 0600; the runtime hands it to the sandbox's
     * user), served like the shared one but with its own connection count
     * (`limits.connectionsPerSandbox`), so a sandbox that holds every connection it can get holds
     * only its own. Closing the scope closes its connections and removes the file.
     */
    readonly listenForSandbox: (file: string) => Effect.Effect<void, GatewayListenFailed, Scope.Scope>
    /** A token for one turn: bound to workspace, conversation, models, expiry and an optional budget. */
    readonly mintToken: (input: MintInput) => Effect.Effect<Minted>
    /** Revokes a token and cuts its in-flight requests; false when it was unknown. */
    readonly revoke: (token: Redacted.Redacted<string>) => Effect.Effect<boolean>
    /** Deployments (cooldown, in flight, latency EWMA), tokens and today's usage, for `pynchy status`. */
    readonly status: Effect.Effect<Status>
    /** Usage, budget and cooldown events; subscribe before traffic to see all of them. */
    readonly subscribe: Effect.Effect<Queue.Dequeue<GatewayEvent>, never, Scope.Scope>
    /** Restores a workspace's spend today (from persisted usage) so a restart keeps its budget. */
    readonly seedUsage: (workspace: string, tokens: number) => Effect.Effect<void>
    /**
     * The gateway keys the store holds (`pynchy keys`): new ones are accepted from now on, gone
     * ones refused and their requests in flight cut. Each is accounted as `key:<name>`.
     */
    readonly setKeys: (keys: ReadonlyArray<KeyRecord>) => Effect.Effect<void>
  }
}

const listen = (server: http.Server, target: { path: string } | { port: number; host: string }, address: string) =>
  Effect.async<void, GatewayListenFailed>((resume) => {
    const onError = (e: NodeJS.ErrnoException) => resume(Effect.fail(new GatewayListenFailed({ address, reason: e.code ?? e.message })))
    server.once("error", onError)
    server.listen(target, () => {
      server.off("error", onError)
      resume(Effect.void)
    })
  })

const closeServer = (server: http.Server) =>
  Effect.async<void>((resume) => {
    server.close(() => resume(Effect.void))
    server.closeAllConnections()
  })

/** A socket file left by a dead process is removed; one a live process answers on is not taken over. */
const clearStaleSocket = (file: string) =>
  Effect.async<void, GatewayListenFailed>((resume) => {
    if (!fs.existsSync(file)) return resume(Effect.void)
    const probe = net.connect(file)
    probe.once("connect", () => {
      probe.destroy()
      resume(Effect.fail(new GatewayListenFailed({ address: file, reason: "another process is listening on this socket" })))
    })
    probe.once("error", () => {
      try {
        fs.unlinkSync(file)
        resume(Effect.void)
      } catch (e) {
        resume(Effect.fail(new GatewayListenFailed({ address: file, reason: `cannot remove stale socket: ${(e as NodeJS.ErrnoException).code ?? "error"}` })))
      }
    })
  })

export class Gateway extends Context.Tag("pynchy/Gateway")<Gateway, Gateway.Service>() {
  static readonly make: Effect.Effect<Gateway.Service, GatewayConfigInvalid | GatewayListenFailed, GatewaySettings | Scope.Scope> = Effect.gen(function* () {
    const settings = yield* GatewaySettings
    const config = settings.gateway
    const catalog = yield* resolveCatalog(settings.providers, config)
    const clock = yield* Effect.clock
    const runtime = yield* Effect.runtime<never>()
    const tracer = yield* Effect.tracer
    const events = yield* Effect.acquireRelease(PubSub.unbounded<GatewayEvent>(), PubSub.shutdown)
    const emit = (e: GatewayEvent) => {
      events.unsafeOffer(e)
    }
    const router = new Router(catalog, {
      strategy: config.routing,
      allowedFails: config.cooldown.allowedFails,
      cooldownMs: config.cooldown.cooldownMs,
      onCooldown: (d, until, reason) => emit({ type: "gateway.cooldown", at: clock.unsafeCurrentTimeMillis(), deployment: d.id, until, reason })
    })
    const tokens = new TokenTable()
    const budgets = new Budgets(config.budgets)
    const deadlines = new Deadlines(config.timeouts.headersMs, () => clock.unsafeCurrentTimeMillis())
    yield* Effect.forkScoped(deadlines.run)
    const dataPath = yield* Effect.acquireRelease(
      Effect.sync(() => makeDataPath({ runtime, clock, catalog, router, tokens, budgets, config, emit, deadlines, tracer })),
      (dp) => Effect.sync(() => dp.close())
    )
    // Turn ends revoke their tokens; this only drops what a crashed caller left behind.
    yield* Effect.addFinalizer(() => Effect.sync(() => tokens.revokeAll()))

    // The shared listeners (socket and TCP) count together; each sandbox's socket counts alone
    // (connections.ts). Over the cap, a connection is closed at accept.
    const shared = connectionCap(config.limits.maxConnections)
    const options = serverOptions(config.limits)

    const serve = (target: { path: string } | { port: number; host: string }, address: string, onConnection: (socket: net.Socket) => void) =>
      Effect.acquireRelease(
        Effect.gen(function* () {
          const server = http.createServer(options, dataPath.handler)
          server.prependListener("connection", onConnection)
          yield* Effect.interruptible(listen(server, target, address))
          return server
        }),
        closeServer
      )

    let socketPath: string | null = null
    if (config.listen.socket) {
      const file = path.join(settings.dataDir, "gateway.sock")
      yield* Effect.sync(() => fs.mkdirSync(settings.dataDir, { recursive: true }))
      yield* clearStaleSocket(file)
      yield* serve({ path: file }, file, shared.onConnection)
      // The host's own clients and user keys: sandboxes never see this socket, each has its own (listenForSandbox).
      yield* Effect.sync(() => fs.chmodSync(file, config.listen.socketMode))
      yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(file, { force: true })))
      socketPath = file
    }
    let url: string | null = null
    if (config.listen.port !== undefined) {
      const server = yield* serve({ port: config.listen.port, host: "127.0.0.1" }, `127.0.0.1:${config.listen.port}`, shared.onConnection)
      const addr = server.address() as net.AddressInfo
      url = `http://127.0.0.1:${addr.port}`
    }

    yield* gatewayLog("Info", "gateway listening", {
      socket: socketPath,
      url,
      deployments: catalog.deployments.length,
      models: [...catalog.groups.keys()]
    })

    const mintToken = Effect.fn("Gateway.mintToken")(function* (input: Gateway.MintInput) {
      const token = tokens.mint(input, clock.unsafeCurrentTimeMillis())
      const minted: Gateway.Minted = {
        token: Redacted.make(token),
        revoke: Effect.sync(() => {
          tokens.revoke(token)
        })
      }
      return minted
    })

    const listenForSandbox = (file: string) =>
      Effect.gen(function* () {
        yield* clearStaleSocket(file)
        yield* serve({ path: file }, file, connectionCap(config.limits.connectionsPerSandbox).onConnection)
        yield* Effect.acquireRelease(Effect.sync(() => fs.chmodSync(file, 0o600)), () => Effect.sync(() => fs.rmSync(file, { force: true })))
      })

    return Gateway.of({
      socketPath,
      url,
      listenForSandbox,
      mintToken,
      revoke: Effect.fn("Gateway.revoke")(function* (token: Redacted.Redacted<string>) {
        return tokens.revoke(Redacted.value(token))
      }),
      status: Effect.sync(() => {
        const now = clock.unsafeCurrentTimeMillis()
        return {
          socketPath,
          url,
          strategy: config.routing,
          activeTokens: tokens.size,
          deployments: router.status(now),
          usageToday: budgets.today(now)
        }
      }),
      subscribe: PubSub.subscribe(events),
      seedUsage: (workspace, n) => Effect.sync(() => budgets.seed(workspace, n, clock.unsafeCurrentTimeMillis())),
      setKeys: (keys) =>
        Effect.sync(() => {
          budgets.setKeyLimits(new Map(keys.flatMap((k) => k.dailyTokens !== null ? [[keyAccount(k.name), k.dailyTokens] as const] : [])))
          tokens.setKeys(keys)
        })
    })
  })

  /** Scoped: listens while the scope is open; closing revokes every token and closes the sockets. */
  static readonly layer = Layer.scoped(Gateway, Gateway.make)
}
