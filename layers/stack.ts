/**
 * The host stack as a function of the parts a composition chooses (config, database, executor,
 * connection runtimes, deploy rollback). Each step is provided to the next, so startup runs top
 * to bottom in the order of ARCHITECTURE.md, shutdown bottom to top, and a failure unwinds what
 * came before it. Siblings merged at one step hold no resources whose order matters.
 */
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import type * as HttpClient from "@effect/platform/HttpClient"
import type { SqlClient } from "@effect/sql"
import { Cause, Effect, Layer, Option } from "effect"
import { Approvals } from "../src/actions/Approvals.js"
import * as Cluster from "../src/cluster/Cluster.js"
import { HostActions } from "../src/actions/HostActions.js"
import { delegating } from "../src/runtimes/agent-session/DelegatingExecutor.js"
import * as PluginChannels from "../src/channels/PluginChannels.js"
import { HostConfig } from "../src/config/HostConfig.js"
import * as Stores from "../src/db/Stores.js"
import type { Transactions } from "../src/db/Transactions.js"
import type { HostStore } from "../src/db/HostStore.js"
import { EventBus } from "../src/events/EventBus.js"
import { EventLog } from "../src/observers/EventLog.js"
import { GatewayEvents } from "../src/gateway/event-bridge.js"
import { Observers } from "../src/observers/Observers.js"
import { PluginObservers } from "../src/observers/PluginObservers.js"
import { Gateway, GatewaySettings } from "../src/gateway/Gateway.js"
import { McpHost } from "../src/mcp/McpHost.js"
import { GatewayKeys } from "../src/gateway/key-sync.js"
import * as ControlSocket from "../src/host/ControlSocket.js"
import { DeployRollback, type StartupRolledBack } from "../src/host/DeployRollback.js"
import { Host, runRecordLayer } from "../src/host/Host.js"
import { LiveStatus } from "../src/host/LiveStatus.js"
import { logged } from "../src/host/lifecycle-log.js"
import { connectionRuntimesLayer, dispatchLayer, RecoveredTurns } from "../src/host/startup-steps.js"
import type { AgentExecutor, ExecutorLiveness } from "../src/pipeline/AgentExecutor.js"
import { Channels } from "../src/pipeline/Channels.js"
import { ConversationContext } from "../src/pipeline/ConversationContext.js"
import { HostIdentity } from "../src/pipeline/HostIdentity.js"
import { InboundCommitted } from "../src/pipeline/InboundCommitted.js"
import { InboxRetention } from "../src/pipeline/InboxRetention.js"
import { Ingest } from "../src/pipeline/Ingest.js"
import { ingestClient } from "../src/cli/ingest-client.js"
import { Outbox } from "../src/pipeline/Outbox.js"
import { Recovery } from "../src/pipeline/Recovery.js"
import { TurnQueue } from "../src/pipeline/TurnQueue.js"
import { TurnRunner } from "../src/pipeline/TurnRunner.js"
import { Workspaces } from "../src/pipeline/Workspaces.js"
import type { PluginRegistry } from "../src/plugins/PluginRegistry.js"
import { layerJoinedConfig } from "../src/plugins/workspaces.js"
import type { ConnectionRuntimeSources } from "../src/runtimes/ConnectionRuntimes.js"
import type { AgentSessions } from "../src/runtimes/agent-session/AgentSessions.js"
import { AgentTasks } from "../src/schedules/AgentTasks.js"
import { Scheduler } from "../src/schedules/Scheduler.js"
import { speechLayer } from "../src/speech/Speech.js"
import { publicUrlFromTunnels } from "../src/tunnels/tunnel-url.js"
import * as RuntimeContextsLive from "../src/runtimes/RuntimeContextsLive.js"
import * as Metrics from "../src/telemetry/metrics.js"
import * as Telemetry from "../src/telemetry/Telemetry.js"
import type { ControlUi } from "../src/ui/ControlUi.js"

export interface StackParts<EC, EP, ED, EE, ES, EA> {
  readonly config: Layer.Layer<HostConfig, EC>
  /** Discovered and validated plugins (startup step 2). */
  readonly plugins: Layer.Layer<PluginRegistry, EP, HostConfig>
  readonly database: Layer.Layer<SqlClient.SqlClient | Transactions, ED, HostConfig>
  readonly executor: Layer.Layer<AgentExecutor | ExecutorLiveness, EE, HostConfig | PluginRegistry | Gateway | ConversationContext | HostActions | McpHost | EventBus>
  /** Agent-session runtimes and attachments; attached conversations are delegated, not sandboxed. */
  readonly agentSessions: Layer.Layer<AgentSessions, EA, HostConfig | SqlClient.SqlClient>
  /** The connection runtimes, in start order (the plugin registry's, or a test's). */
  readonly runtimes: Layer.Layer<ConnectionRuntimeSources, ES, HostConfig | PluginRegistry>
  readonly rollback: Layer.Layer<DeployRollback, never, HostConfig>
  /** The event bus and its observers; by default the bus with the event log and plugins' observers. */
  readonly events?: Layer.Layer<EventBus | Observers, never, HostConfig | HostStore | SqlClient.SqlClient | PluginRegistry>
  /** The HTTP client of the built-in connection runtimes (Matrix); fetch by default. */
  readonly httpClient?: Layer.Layer<HttpClient.HttpClient>
  /** OpenTelemetry export; by default from `OTEL_EXPORTER_OTLP_ENDPOINT` (off when unset). */
  readonly telemetry?: Layer.Layer<never>
}

export const makeStack = <EC, EP, ED, EE, ES, EA>(parts: StackParts<EC, EP, ED, EE, ES, EA>) => {
  // 0. telemetry: first up, so every later step's spans are exported; last down, so its release
  // flushes what the others recorded while stopping.
  const telemetry = parts.telemetry ?? Telemetry.layerConfig
  // 1. config
  const config = logged("config", Layer.merge(parts.config, HostIdentity.layer))
  // 2. plugins; from here on the config's workspaces include the plugins' (src/plugins/workspaces.ts)
  // The public base URL (a tunnel's, when settings say `publicUrl: tunnel`) is detected on first use.
  const plugins = logged("plugins", Layer.provideMerge(Layer.merge(layerJoinedConfig, publicUrlFromTunnels), parts.plugins))
  // 3. database, migrations, this run's record
  const database = logged("database", Layer.provideMerge(runRecordLayer, Layer.provideMerge(Stores.layer, parts.database)))
  // The event bus and its observers (the event log, plugins' observers) come before anything that
  // publishes, so they see every event, and close after it, so they write the last ones.
  const events = logged("event bus", parts.events ?? Layer.mergeAll(EventLog.layer, PluginObservers.layer, Metrics.layer).pipe(Layer.provideMerge(Observers.layer), Layer.provideMerge(EventBus.layer)))
  const sessions = logged("agent sessions", parts.agentSessions)
  // 6. the LLM gateway (its usage events go to the events table). It starts before the executor,
  // which mints a token per turn; nothing dispatches before step 9, so starting it early is safe.
  // Gateway keys (`pynchy keys`) are read from the database once it listens, and again on a control-socket wake.
  const gateway = logged("gateway", Layer.merge(GatewayEvents.layer, GatewayKeys.layer).pipe(Layer.provideMerge(Gateway.layer), Layer.provideMerge(GatewaySettings.layerHost)))
  // Conversation memory (history, summaries through the gateway, the context start) for the
  // executor, which builds each turn's context, and the runner, which handles /new.
  const memory = logged("conversation memory", ConversationContext.layer)
  // Outbound deliveries and host actions come before the executor, which offers actions as tools.
  // Spoken replies (src/speech) are made by the outbox, right before a send that carries audio.
  const outbox = logged("outbox", Layer.provideMerge(Outbox.layer, Layer.provideMerge(speechLayer, Layer.merge(Channels.layer, Workspaces.layer))))
  // Approvals reads the replies Ingest (step "pipeline") commits, so it outlives Ingest at shutdown.
  // Host MCP servers start on first use and stop after everything that calls them.
  const actions = logged(
    "host actions",
    Layer.provideMerge(HostActions.layer, Layer.provideMerge(Layer.mergeAll(Approvals.layer, AgentTasks.layer, McpHost.layer), InboundCommitted.layer))
  )
  const support = Layer.mergeAll(delegating(parts.executor), parts.rollback, LiveStatus.layer, parts.runtimes)
  // 5. the queue accepts work; dispatch stays closed until step 9, so building it before step 4
  // (which needs the executor's liveness, provided with it) changes nothing the seed orders.
  // With Postgres (several hosts) the queue starts only the turns of the connections this host holds.
  const queue = logged("queue", Layer.provideMerge(TurnQueue.layer, Layer.merge(TurnRunner.layer, Cluster.holdingLayer)))
  // Inbox retention removes the files Ingest saved once they are old (src/files/inbox-retention.ts).
  const pipeline = logged("pipeline", Layer.provideMerge(Layer.mergeAll(Ingest.layer, Recovery.layer, InboxRetention.layer), TurnQueue.signalLayer))
  // 4. orphan claims released (needs the liveness of executors; nothing dispatches yet)
  // A cluster host releases orphan claims per connection, as it takes each over (src/cluster).
  const recovered = logged("recovery: release orphan claims", Cluster.whenClustered(Layer.succeed(RecoveredTurns, { survivors: [] }), RecoveredTurns.layer))
  const control = logged("control socket", ControlSocket.layer)
  // 7 + 8. connection runtimes, in order, each ready before the next
  // What the built-in runtimes talk through (HttpClient) is a requirement a custom host may swap.
  // A cluster host joins the others here and starts the runtimes of the connections it is given.
  const runtimes = logged(
    "connection runtimes",
    Layer.provide(Cluster.whenClustered(Cluster.runnerRuntimes, connectionRuntimesLayer), Layer.merge(RuntimeContextsLive.layer, parts.httpClient ?? FetchHttpClient.layer))
  )
  // 9. interrupted turns dispatched
  const dispatch = logged("recovery: dispatch", dispatchLayer)
  // Scheduled work: the timer fires due runs into the pipeline (docs/schedules.md).
  const schedules = logged("schedules", Scheduler.layer)
  // 10. channels, then ready
  const channels = logged("channels", PluginChannels.layer)
  // The Control UI (only with `ui:` in config) reads what every step above holds and binds the
  // channel of its own connection. Its module (and the HTTP server under it) loads only then.
  const controlUi: typeof ControlUi.layer = Layer.unwrapEffect(Effect.map(Effect.promise(() => import("../src/ui/ControlUi.js")), (m) => m.ControlUi.layer))
  const ui = Layer.unwrapEffect(Effect.map(HostConfig, ({ config }) => (config.ui === undefined ? Layer.empty : logged("control ui", controlUi))))
  const stack = logged("host", Host.layer).pipe(
    Layer.provideMerge(ui),
    Layer.provideMerge(channels),
    Layer.provideMerge(schedules),
    Layer.provideMerge(dispatch),
    Layer.provideMerge(runtimes),
    Layer.provideMerge(control),
    Layer.provideMerge(recovered),
    Layer.provideMerge(pipeline),
    Layer.provideMerge(queue),
    Layer.provideMerge(support),
    Layer.provideMerge(actions),
    Layer.provideMerge(outbox),
    Layer.provideMerge(memory),
    Layer.provideMerge(gateway),
    Layer.provideMerge(sessions),
    Layer.provideMerge(events),
    Layer.provideMerge(database),
    Layer.provideMerge(plugins),
    Layer.provideMerge(config),
    Layer.provideMerge(telemetry)
  )
  // A failed start during a deploy goes back to the previous version (DeployRollback decides).
  return Layer.catchAllCause(stack, (cause) =>
    Layer.unwrapEffect(
      Effect.gen(function* () {
        const rollback = yield* DeployRollback
        const failure = Cause.squash(cause)
        const rolledBack = yield* rollback.rollback(failure instanceof Error ? failure.message : String(failure))
        const next: Cause.Cause<Layer.Layer.Error<typeof stack> | StartupRolledBack> = Option.isSome(rolledBack) ? Cause.fail(rolledBack.value) : cause
        return Layer.failCause(next)
      })
    ).pipe(Layer.provide(Layer.provide(parts.rollback, parts.config)))
  )
}

/**
 * What a short-lived command needs to write into a host's database: config, database, stores,
 * routing and the durable ingest (`ingestClient`: it decides approval replies, and its wake-ups go
 * to the running host's control socket).
 */
export const makeClient = <EC, ED>(parts: { readonly config: Layer.Layer<HostConfig, EC>; readonly database: Layer.Layer<SqlClient.SqlClient | Transactions, ED, HostConfig> }) => {
  const base = Layer.provideMerge(Layer.provideMerge(Stores.layer, parts.database), parts.config)
  // Its ingest spans are exported like the host's (the message's trace starts in this process).
  return Layer.provideMerge(ingestClient, base).pipe(Layer.provideMerge(Telemetry.layerConfig))
}
