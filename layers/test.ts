/** The test host: a given config, an in-memory (or file) database, the scripted executor. */
import type { Duration } from "effect"
import { Effect, Layer, Redacted } from "effect"
import { AgentSessionRuntimeRegistry } from "../src/runtimes/agent-session/AgentSessionRuntimeRegistry.js"
import { AgentSessions } from "../src/runtimes/agent-session/AgentSessions.js"
import { AttachmentStore } from "../src/runtimes/agent-session/AttachmentStore.js"
import type { PynchyConfig } from "../src/config/schema.js"
import { HostConfig } from "../src/config/HostConfig.js"
import * as Database from "../src/db/Database.js"
import * as ScriptedExecutor from "../src/pipeline/ScriptedExecutor.js"
import { DeployRollback } from "../src/host/DeployRollback.js"
import { ConnectionRuntimeSources, type RuntimeEntry } from "../src/runtimes/ConnectionRuntimes.js"
import { makeStack, type StackParts } from "./stack.js"
import type { AgentExecutor, ExecutorLiveness } from "../src/pipeline/AgentExecutor.js"
import type { ConversationContext } from "../src/pipeline/ConversationContext.js"
import type { HostActions } from "../src/actions/HostActions.js"
import type { McpHost } from "../src/mcp/McpHost.js"
import type { Gateway } from "../src/gateway/Gateway.js"
import type { EventBus } from "../src/events/EventBus.js"
import { tmpdir } from "node:os"
import { BUILTINS, type BuiltinPlugin } from "../src/builtins/list.js"
import { PluginRegistry } from "../src/plugins/PluginRegistry.js"

export interface TestHostOptions {
  readonly replyDelay?: Duration.Duration
  readonly databaseFile?: string
  /** A Postgres database instead (its URL); wins over databaseFile. */
  readonly databaseUrl?: string
  readonly runtimes?: ReadonlyArray<RuntimeEntry>
  readonly rollback?: Layer.Layer<DeployRollback>
  /** Agent-session runtimes the test registers (default: none). */
  readonly agentSessionRuntimes?: (registry: AgentSessionRuntimeRegistry.Service) => Effect.Effect<unknown, unknown>
  /** Plugins added to the built-ins (a test's service handlers, channels, runtimes). */
  readonly plugins?: ReadonlyArray<BuiltinPlugin>
  /** Replaces the event bus and its observers (see StackParts). */
  readonly events?: StackParts<never, never, never, never, never, never>["events"]
  /** Replaces the scripted executor. */
  readonly executor?: Layer.Layer<AgentExecutor | ExecutorLiveness, never, ConversationContext | Gateway | HostActions | McpHost | EventBus>
}

export const makeTestHost = (config: PynchyConfig, options: TestHostOptions = {}) =>
  makeStack({
    config: HostConfig.layerFrom(config),
    // Only the built-ins: a test host does not scan node_modules for installed plugins.
    plugins: PluginRegistry.layerWith({
      root: tmpdir(),
      builtins: [...BUILTINS, ...(options.plugins ?? [])]
    }),
    database: options.databaseUrl !== undefined
      ? Database.layerPostgres(Redacted.make(options.databaseUrl))
      : options.databaseFile ? Database.layerFile(options.databaseFile, { backgroundCheckpoints: true }) : Database.layerMemory,
    executor: options.executor ?? ScriptedExecutor.layer(options.replyDelay ? { replyDelay: options.replyDelay } : undefined),
    runtimes: Layer.succeed(ConnectionRuntimeSources, options.runtimes ?? []),
    rollback: options.rollback ?? DeployRollback.layerNoop,
    ...(options.events !== undefined ? { events: options.events } : {}),
    agentSessions: Layer.provideMerge(
      AgentSessions.layer,
      Layer.merge(
        AttachmentStore.layerDatabase,
        Layer.effectDiscard(Effect.flatMap(AgentSessionRuntimeRegistry, (r) => (options.agentSessionRuntimes ? Effect.orDie(options.agentSessionRuntimes(r)) : Effect.void))).pipe(
          Layer.provideMerge(AgentSessionRuntimeRegistry.layer)
        )
      )
    )
  })
