/**
 * The plugin API as a plugin author sees it: a plain object implementing any subset of twelve
 * hooks. Hooks return plain values or Promises (no Effect knowledge needed); Effect-native
 * built-ins may return Effects. docs/plugins/hooks.md documents every hook.
 */
import type { Effect } from "effect"
import type { PynchyConfig } from "../config/schema.js"
import type { AudioFormat } from "../domain/audio.js"
import type { Channel } from "./channel.js"
import type { ConnectionRuntime } from "./connection-runtime.js"
import type { NativeConnectionRuntime } from "./native-runtime.js"

/** What every hook receives: the decoded config and a lookup of `connections:` settings. */
export interface PluginContext {
  readonly config: PynchyConfig
  /** Settings of a named connection from pynchy.yaml `connections:`, if any. */
  connectionConfig(name: string): Record<string, unknown> | undefined
}
/** The context `createChannel` receives (the same context every hook gets). */
export type ChannelFactoryContext = PluginContext

/** One value, several, or none (`null`/`undefined`: nothing to contribute, e.g. not configured). */
export type Contributed<A> = A | ReadonlyArray<A> | null | undefined
export type HookResult<A> =
  | Contributed<A>
  | PromiseLike<Contributed<A>>
  | Effect.Effect<Contributed<A>, unknown, never>

/**
 * An LLM framework the agent runner can use; it runs inside the sandbox. `module` is the absolute
 * path of a self-contained ES module file (`.mjs`, or `.js` in a `"type": "module"` package) whose
 * default export is `async (context) => void`, called with the core context the built-in cores get
 * (docs/plugins/hooks.md). The runner imports it inside the sandbox, where it is mounted read-only,
 * so it must not import sibling files: bundle it into one file, or give `packages`, the absolute
 * path of a `node_modules` folder mounted read-only beside it, where its bare imports resolve.
 * `api` is the gateway API it speaks (default `chat`; `none` for a core that needs no model).
 */
export interface ModuleAgentCore {
  readonly name: string
  readonly description?: string
  readonly module: string
  readonly packages?: string
  readonly api?: "chat" | "messages" | "none"
}

/** A core the runner bundle carries (how the host's own agent-cores plugin names them). */
export interface BuiltinAgentCore {
  readonly name: string
  readonly description?: string
  readonly builtin: true
}

export type AgentCore = ModuleAgentCore | BuiltinAgentCore

export type RiskTier = "low" | "medium" | "high"

/** A typed host action the agent may call through IPC; the handler runs on the host under policy. */
export interface ServiceHandler {
  /** The action id, e.g. `hello.greet`. */
  readonly name: string
  readonly description: string
  /** A JSON Schema of the input, `type: "object"`. */
  readonly inputSchema: { readonly type: "object"; readonly [key: string]: unknown }
  readonly risk: RiskTier
  handler(input: any, context?: any): unknown
}

/** A plugin-owned semantic action: where it surfaces and what evidence it requires. */
export interface ActionSpec {
  readonly id: string
  readonly surfaces: ReadonlyArray<string>
  readonly evidence: ReadonlyArray<string>
}

/** What `synthesize` is asked: a reply's text and the workspace's `voice.voice` (the synthesizer's own name for a voice), if set. */
export interface SpeechRequest {
  readonly text: string
  readonly voice?: string
}


/** What `synthesize` answers: the audio bytes and their format. */
export interface SpeechAudio {
  readonly format: AudioFormat
  readonly audio: Uint8Array
}

/**
 * Turns a reply's text into audio on the host (docs/plugins/hooks.md). `synthesize` answers
 * directly or with a Promise, within the host's deadline (`synthesize_timeout`).
 */
export interface SpeechSynthesizer {
  readonly name: string
  synthesize(request: SpeechRequest): SpeechAudio | PromiseLike<SpeechAudio>
}

export interface ContainerRuntime {
  readonly name: string
  start(spec: any): unknown
  kill(id: string): unknown
  isAlive(id: string): unknown
}

export interface Tunnel {
  readonly name: string
  /** Whether this kind of remote connectivity is present (and how to reach the host through it). */
  detect(): unknown
}

export interface Observer {
  readonly name: string
  onEvent(event: any): unknown
}

/**
 * An MCP tool server (docs/plugins/hooks.md): `where: "sandbox"` starts it inside each turn's
 * sandbox, `where: "host"` once on the host with its calls under host policy. `env` names host
 * environment variables passed to it; `tools` is an allowlist of its tools.
 */
export interface McpServerSpec {
  readonly name: string
  readonly command: string
  readonly args?: ReadonlyArray<string>
  readonly env?: ReadonlyArray<string>
  readonly where: "sandbox" | "host"
  readonly tools?: ReadonlyArray<string>
  readonly risk?: RiskTier
  readonly timeoutSeconds?: number
}

/** A managed workspace definition: the fields of a `workspaces:` entry of pynchy.yaml (id required). */
export interface WorkspaceSpec {
  readonly id: string
  readonly instructions?: string
  readonly folder?: string
  readonly skills?: ReadonlyArray<string>
  readonly actions?: ReadonlyArray<string>
  readonly agentCore?: string
  readonly model?: string
  readonly sandbox?: { readonly runtime?: string; readonly memoryMb?: number; readonly maxProcesses?: number; readonly timeoutSeconds?: number }
  /** A cron expression for periodic turns. */
  readonly schedule?: string
}

/** A plugin: a name plus any subset of the hooks. */
export interface Plugin {
  readonly name: string
  readonly version?: string
  readonly description?: string
  agentCore?(context: PluginContext): HookResult<AgentCore>
  serviceHandler?(context: PluginContext): HookResult<ServiceHandler>
  actionSpecs?(context: PluginContext): HookResult<ActionSpec>
  /** Absolute folder paths, each holding a SKILL.md. */
  skillPaths?(context: PluginContext): HookResult<string>
  createChannel?(context: ChannelFactoryContext): HookResult<Channel>
  /** Plugins return the Promise shape; built-ins may return the Effect-native one (src/contracts/native-runtime.ts). */
  connectionRuntime?(context: PluginContext): HookResult<ConnectionRuntime | NativeConnectionRuntime>
  speechSynthesizer?(context: PluginContext): HookResult<SpeechSynthesizer>
  containerRuntime?(context: PluginContext): HookResult<ContainerRuntime>
  tunnel?(context: PluginContext): HookResult<Tunnel>
  observer?(context: PluginContext): HookResult<Observer>
  mcpServerSpec?(context: PluginContext): HookResult<McpServerSpec>
  workspaceSpec?(context: PluginContext): HookResult<WorkspaceSpec>
}

/** Identity at runtime; it only gives a plugin object its type. */
export const definePlugin = <const P extends Plugin>(plugin: P): P => plugin

/** The hooks, in the order the registry calls them and `pynchy plugins` lists them. */
export const HOOKS = [
  "agentCore",
  "serviceHandler",
  "actionSpecs",
  "skillPaths",
  "createChannel",
  "connectionRuntime",
  "speechSynthesizer",
  "containerRuntime",
  "tunnel",
  "observer",
  "mcpServerSpec",
  "workspaceSpec"
] as const
export type HookName = (typeof HOOKS)[number]
