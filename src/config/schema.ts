import { Schema } from "effect"
import { ConnectionName, WorkspaceId } from "../domain/ids.js"
import { McpServerSpec } from "../domain/mcp.js"
import { Route, Workspace } from "../domain/workspace.js"
import { ClusterConfig } from "./cluster.js"
import { DatabaseConfig } from "./database.js"
import { FilesConfig } from "./files.js"
import { GatewayConfig } from "./gateway.js"
import { UI_CONNECTION, UiConfig } from "./ui.js"

const PositiveInt = Schema.Int.pipe(Schema.positive())
const Millis = Schema.Int.pipe(Schema.between(1, 86_400_000))

export const ProviderKind = Schema.Literal("openai", "anthropic", "openai-compatible")

/** An LLM provider deployment. The key comes from an env var or a file, never from the YAML itself. */
export class ProviderConfig extends Schema.Class<ProviderConfig>("ProviderConfig")({
  name: Schema.NonEmptyTrimmedString,
  kind: ProviderKind,
  baseUrl: Schema.optional(Schema.String.pipe(Schema.pattern(/^https?:\/\//, { message: () => "must start with http:// or https://" }))),
  apiKeyEnv: Schema.optional(Schema.String.pipe(Schema.pattern(/^[A-Z_][A-Z0-9_]*$/, { message: () => "must be an environment variable name" }))),
  apiKeyFile: Schema.optional(Schema.NonEmptyString),
  models: Schema.optionalWith(Schema.Array(Schema.NonEmptyString), { default: () => [] }),
  weight: Schema.optionalWith(Schema.Number.pipe(Schema.positive()), { default: () => 1 }),
  rpm: Schema.optional(PositiveInt),
  tpm: Schema.optional(PositiveInt)
}) {}

export class PluginsConfig extends Schema.Class<PluginsConfig>("PluginsConfig")({
  /** Extra plugin modules: package names, absolute paths, or paths relative to the config file's folder. */
  modules: Schema.optionalWith(Schema.Array(Schema.NonEmptyString), { default: () => [] }),
  /** Plugin names not to load. */
  disabled: Schema.optionalWith(Schema.Array(Schema.NonEmptyString), { default: () => [] })
}) {}

export class Limits extends Schema.Class<Limits>("Limits")({
  maxConcurrentTurns: Schema.optionalWith(PositiveInt, { default: () => 4 }),
  maxTurnAttempts: Schema.optionalWith(PositiveInt, { default: () => 3 }),
  retryBaseMs: Schema.optionalWith(Millis, { default: () => 1_000 }),
  runtimeStartTimeoutMs: Schema.optionalWith(Millis, { default: () => 30_000 }),
  runtimeCloseTimeoutMs: Schema.optionalWith(Millis, { default: () => 10_000 }),
  runtimeReadyTimeoutMs: Schema.optionalWith(Millis, { default: () => 30_000 }),
  readinessCheckMs: Schema.optionalWith(Millis, { default: () => 1_000 }),
  shutdownTimeoutMs: Schema.optionalWith(Millis, { default: () => 15_000 }),
  /** Session and sandbox folders older than this are removed (turns never last that long). */
  sessionRetentionDays: Schema.optionalWith(PositiveInt, { default: () => 7 }),
  /** After a turn, a workspace folder past this size earns the conversation a notice. */
  workspaceMaxMb: Schema.optionalWith(PositiveInt, { default: () => 2_048 }),
  /** Replies one turn may send (or as many as it has messages); the next one fails the turn (`too_many_replies`). */
  maxRepliesPerTurn: Schema.optionalWith(PositiveInt, { default: () => 50 }),
  /** The shortest interval between two runs of a task an agent creates (docs/schedules.md). */
  minTaskIntervalSeconds: Schema.optionalWith(PositiveInt, { default: () => 300 }),
  /** Tasks one workspace's agents may keep active at once. */
  maxTasksPerWorkspace: Schema.optionalWith(PositiveInt, { default: () => 50 })
}) {}

/** The event bus's observers (docs/observability.md). */
export class ObserversConfig extends Schema.Class<ObserversConfig>("ObserversConfig")({
  /** The event log keeps this many days of events; older ones are pruned hourly. */
  retainDays: Schema.optionalWith(PositiveInt, { default: () => 30 }),
  /** Events each observer may have waiting; past that, its new events are dropped (and counted). */
  queueSize: Schema.optionalWith(PositiveInt, { default: () => 1_024 })
}) {}

/** Settings of a named connection; `kind` picks the plugin that serves it, the rest is the plugin's. */
export const ConnectionConfig = Schema.Struct(
  { kind: Schema.NonEmptyTrimmedString },
  Schema.Record({ key: Schema.String, value: Schema.Unknown })
)
export type ConnectionConfig = typeof ConnectionConfig.Type

export const ContainerRuntimeChoice = Schema.String.pipe(Schema.nonEmptyString())

const defaultWorkspaces = () => [Workspace.make({ id: WorkspaceId.make("main"), instructions: "You are a helpful personal assistant." })]
const defaultRoutes = () => [
  Route.make({ connection: ConnectionName.make("terminal"), place: "*", workspace: WorkspaceId.make("main") }),
  Route.make({ connection: ConnectionName.make("cli"), place: "*", workspace: WorkspaceId.make("main") }),
  // The Control UI's chat; nothing arrives on it unless `ui:` is set.
  Route.make({ connection: ConnectionName.make(UI_CONNECTION), place: "*", workspace: WorkspaceId.make("main") })
]

/** The shape of `pynchy.yaml`. Every field has a default: an empty file is a working host. */
export class PynchyConfig extends Schema.Class<PynchyConfig>("PynchyConfig")({
  dataDir: Schema.optionalWith(Schema.NonEmptyString, { default: () => ".pynchy" }),
  /** Postgres instead of the SQLite file in dataDir (docs/deploy.md). */
  database: Schema.optionalWith(DatabaseConfig, { default: () => DatabaseConfig.make({}) }),
  /** With Postgres, how this host joins the others as a cluster runner (docs/deploy.md). */
  cluster: Schema.optionalWith(ClusterConfig, { default: () => ClusterConfig.make({}) }),
  workspaces: Schema.optionalWith(Schema.Array(Workspace), { default: defaultWorkspaces }),
  routes: Schema.optionalWith(Schema.Array(Route), { default: defaultRoutes }),
  connections: Schema.optionalWith(Schema.Record({ key: ConnectionName, value: ConnectionConfig }), { default: () => ({}) }),
  providers: Schema.optionalWith(Schema.Array(ProviderConfig), { default: () => [] }),
  /** MCP tool servers workspaces may list (docs/plugins/hooks.md, `mcpServerSpec`). */
  mcpServers: Schema.optionalWith(Schema.Array(McpServerSpec), { default: () => [] }),
  plugins: Schema.optionalWith(PluginsConfig, { default: () => PluginsConfig.make({}) }),
  /** `auto` picks bwrap where installed, else process. */
  containerRuntime: Schema.optionalWith(ContainerRuntimeChoice, { default: () => "auto" }),
  limits: Schema.optionalWith(Limits, { default: () => Limits.make({}) }),
  /** Files in (the workspace inbox) and out (its outbox): size, count and type limits. */
  files: Schema.optionalWith(FilesConfig, { default: () => FilesConfig.make({}) }),
  /** The LLM gateway: listen options, model groups, routing, retries, budgets (docs/gateway.md). */
  gateway: Schema.optionalWith(GatewayConfig, { default: () => GatewayConfig.make({}) }),
  observers: Schema.optionalWith(ObserversConfig, { default: () => ObserversConfig.make({}) }),
  /** The Control UI on loopback (docs/control-ui.md); off when absent. */
  ui: Schema.optional(UiConfig)
}) {}
