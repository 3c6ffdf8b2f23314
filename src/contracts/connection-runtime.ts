import type { Channel } from "./channel.js"

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
  /** The dedup key, with the connection. */
  readonly providerEventId: string
  readonly sender: string
  readonly text: string
  readonly metadata?: Record<string, unknown>
  /**
   * A digest of what this event id stands for (1-255 characters, e.g. SHA-256 hex of the content),
   * stored with the receipt. Give it when a provider may reuse an id for other content (a client's
   * idempotency key): the same id with another fingerprint then answers `conflict: true`.
   */
  readonly fingerprint?: string
  /**
   * Files the user sent (a photo, a document). Each one within `files:` of pynchy.yaml (size,
   * type, count) is saved in the workspace at `/workspace/inbox/<conversation>/` before the message
   * commits, and the agent is told its path; the others are named in the message's metadata with
   * why they were refused (`files`, `filesRefused`). The message is stored either way.
   */
  readonly files?: ReadonlyArray<{ readonly name: string; readonly mimeType?: string; readonly bytes: Uint8Array }>
  readonly cursor?: { readonly stream: string; readonly position: string; readonly order: number }
}

export interface IngestResult {
  /** The new message, or for a known event id the message first ingested under it. */
  readonly messageId: number
  readonly conversationId: string
  /** The event id was already known: no message was written (the cursor still advances). */
  readonly duplicate: boolean
  /**
   * Only with `duplicate`: the event id is known with another fingerprint, so this input is NOT
   * stored anywhere and nothing was written, not even the cursor. `messageId` is the other message.
   * Never true unless both this input and the first one carried a fingerprint.
   */
  readonly conflict: boolean
}

export interface WorkspaceInfo {
  readonly id: string
  readonly instructions: string
  readonly [key: string]: unknown
}

/** Host-owned callbacks handed to a runtime at start. */
export interface ConnectionRuntimeContext {
  /**
   * Durable ingest: receipt (dedup, with the fingerprint) + message + cursor in one transaction;
   * resolves after commit. A known event id resolves `duplicate: true` (and `conflict: true` when
   * its fingerprint differs); invalid input or a place without a route rejects.
   */
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
  /** The routes of a connection (enabled ones), from config, with the group-chat trigger when set. */
  routes(connection: string): ReadonlyArray<{ place: string; workspace: string; trigger?: string }>
  /** Settings of a named connection from pynchy.yaml `connections:`, if any. */
  connectionConfig(name: string): Record<string, unknown> | undefined
}
