import { Config, Context, Effect, Layer, type Option } from "effect"
import * as os from "node:os"
import * as path from "node:path"
import type { AgentSessionStatus, Attachment } from "../../domain/attachment.js"
import type { AttachmentId, ConversationId } from "../../domain/ids.js"
import { makeDatabaseStore } from "./attachment-store-database.js"
import { makeDirectoryStore } from "./attachment-store-directory.js"
import { makeStateStore } from "./attachment-records.js"

export interface AttachInput {
  readonly conversationId: ConversationId
  readonly runtimeId: string
  readonly provider: string
  readonly sessionId: string
  readonly providerSessionId?: string | undefined
  readonly host?: string | undefined
  readonly remoteUrl?: string | undefined
  readonly metadata?: Readonly<Record<string, string>> | undefined
  readonly now: number
}

export interface Attached {
  /** The new current record (its `replaces` names the superseded one, if any). */
  readonly attachment: Attachment
  readonly superseded: Option.Option<Attachment>
}

export declare namespace AttachmentStore {
  /**
   * Durable attachment lineage: at most one `current` record per conversation; replaced ones are
   * kept as `superseded`, detached ones as `detached`. Storage failures are defects.
   */
  export interface Service {
    /** Atomically: the current record (if any) becomes superseded, and a new current one replaces it. */
    readonly attach: (input: AttachInput) => Effect.Effect<Attached>
    /** current → detached; none when nothing was current. */
    readonly detach: (conversationId: ConversationId, now: number) => Effect.Effect<Option.Option<Attachment>>
    readonly current: (conversationId: ConversationId) => Effect.Effect<Option.Option<Attachment>>
    /** Every record of the conversation, oldest first. */
    readonly history: (conversationId: ConversationId) => Effect.Effect<ReadonlyArray<Attachment>>
    /** Every current record. */
    readonly currents: Effect.Effect<ReadonlyArray<Attachment>>
    /**
     * Compare-and-set: stores `status` with `token` only when the record is current and its stored
     * token is below `token`. False when refused (stale, superseded, detached or unknown).
     */
    readonly applyStatus: (id: AttachmentId, token: number, status: AgentSessionStatus, now: number) => Effect.Effect<boolean>
    /** The highest observation token of any record, current or not; 0 when none. */
    readonly maxObservationToken: Effect.Effect<number>
  }
}

export interface DirectoryOptions {
  readonly dir: string
  /** The file is `<dir>/<agentId>.attachments.json`. */
  readonly agentId: string
}

/** `PYNCHY_ATTACHMENT_STORE_DIR`, default `~/.pynchy/attachments`. */
export const attachmentStoreDirConfig = Config.string("PYNCHY_ATTACHMENT_STORE_DIR").pipe(
  Config.withDefault(path.join(os.homedir(), ".pynchy", "attachments"))
)

export class AttachmentStore extends Context.Tag("pynchy/AttachmentStore")<AttachmentStore, AttachmentStore.Service>() {
  /** The host database (`attachments` table); needs SqlClient. */
  static readonly layerDatabase = Layer.effect(AttachmentStore, makeDatabaseStore)

  /** One JSON file per agent, written atomically; for the standalone MCP command. */
  static readonly layerDirectory = (options: DirectoryOptions) => Layer.effect(AttachmentStore, makeDirectoryStore(options))

  /** The directory from `PYNCHY_ATTACHMENT_STORE_DIR` (default `~/.pynchy/attachments`). */
  static readonly layerDirectoryConfig = (agentId: string) =>
    Layer.unwrapEffect(Effect.map(attachmentStoreDirConfig, (dir) => AttachmentStore.layerDirectory({ dir: path.resolve(dir), agentId })))

  /** Process memory: for library callers that pass no store, and tests. */
  static readonly layerMemory = Layer.effect(AttachmentStore, makeStateStore({ records: [] }, () => Effect.void))
}
