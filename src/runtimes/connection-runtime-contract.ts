import type { Channel } from "../pipeline/channel-contract.js"

/**
 * The connection runtime contract of ../shared/seeds/connection-runtime-hook.md, for plugin
 * authors (Promises, no Effect). A runtime is a long-lived, host-side provider loop that
 * authenticates, deduplicates and ingests provider input.
 */
export interface ConnectionRuntime {
  /** Unique across all plugins. */
  readonly name: string
  start(context: ConnectionRuntimeContext): Promise<void>
  /** Stops background work and removes ephemeral bindings; durable receipts and cursors stay. */
  close(): Promise<void>
  /** Live provider-loop health, not merely "start() returned once". */
  isReady(): boolean
}

export interface IngestMessageInput {
  readonly connection: string
  readonly place: string
  readonly providerEventId: string
  readonly sender: string
  readonly text: string
  readonly metadata?: Record<string, unknown>
  readonly cursor?: { readonly stream: string; readonly position: string; readonly order: number }
}

export interface IngestResult {
  readonly messageId: number
  readonly conversationId: string
  readonly duplicate: boolean
}

export interface WorkspaceInfo {
  readonly id: string
  readonly instructions: string
  readonly [key: string]: unknown
}

/** Host-owned callbacks handed to a runtime at start. */
export interface ConnectionRuntimeContext {
  /** Durable ingest: receipt (dedup) + message + cursor in one transaction; resolves after commit. */
  ingestMessage(input: IngestMessageInput): Promise<IngestResult>
  /** The durable cursor of (this connection, stream), to resume a provider loop after a restart. */
  getCursor(connection: string, stream: string): Promise<{ position: string; order: number } | null>
  readonly channels: {
    /** The channel that delivers for a connection name, if any. */
    get(name: string): Channel | undefined
    /** Binds an outbound channel for this runtime's routes; removed when the runtime closes. */
    bind(channel: Channel): void
  }
  readonly workspaces: {
    list(): Promise<ReadonlyArray<WorkspaceInfo>>
    get(id: string): Promise<WorkspaceInfo | undefined>
    /** Durable registration of a workspace definition (same shape as in pynchy.yaml). */
    register(definition: unknown): Promise<void>
  }
  /** Binds a conversation to an agent session (an LLM session id or an attachment); durable. */
  bindSession(conversationId: string, binding: { kind: "llm" | "attachment"; ref: string }): Promise<void>
  /** The routes of a connection (enabled ones), from config. */
  routes(connection: string): ReadonlyArray<{ place: string; workspace: string }>
  /** Settings of a named connection from pynchy.yaml `connections:`, if any. */
  connectionConfig(name: string): Record<string, unknown> | undefined
}
