import { SqlClient, SqlSchema } from "@effect/sql"
import { Clock, Context, Effect, Layer, Option, Schema } from "effect"
import { ConversationId, WorkspaceId } from "../domain/ids.js"
import { SessionBinding, Workspace } from "../domain/workspace.js"
import { JsonColumn } from "./rows.js"

const WorkspaceRow = Schema.Struct({ definition: JsonColumn(Workspace) })
const BindingRow = Schema.Struct({
  conversationId: ConversationId,
  kind: Schema.Literal("llm", "attachment"),
  ref: Schema.String,
  updatedAt: Schema.Number
})

export declare namespace WorkspaceStore {
  /** Workspaces registered at runtime (config ones are not stored) and conversation session bindings. */
  export interface Service {
    /** Registers or replaces a workspace definition durably. */
    readonly register: (workspace: Workspace) => Effect.Effect<void>
    readonly registered: Effect.Effect<ReadonlyArray<Workspace>>
    readonly get: (id: WorkspaceId) => Effect.Effect<Option.Option<Workspace>>
    readonly bindSession: (binding: Omit<SessionBinding, "updatedAt">) => Effect.Effect<void>
    readonly sessionBinding: (conversationId: ConversationId) => Effect.Effect<Option.Option<SessionBinding>>
    readonly unbindSession: (conversationId: ConversationId) => Effect.Effect<void>
  }
}

export class WorkspaceStore extends Context.Tag("pynchy/WorkspaceStore")<WorkspaceStore, WorkspaceStore.Service>() {
  static readonly make = Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const encode = Schema.encode(Schema.parseJson(Workspace))
    const all = SqlSchema.findAll({ Request: Schema.Void, Result: WorkspaceRow, execute: () => sql`SELECT definition FROM workspaces ORDER BY id` })
    const one = SqlSchema.findOne({ Request: WorkspaceId, Result: WorkspaceRow, execute: (id) => sql`SELECT definition FROM workspaces WHERE id = ${id}` })
    const binding = SqlSchema.findOne({
      Request: ConversationId,
      Result: BindingRow,
      execute: (id) => sql`SELECT conversation_id AS "conversationId", kind, ref, updated_at AS "updatedAt" FROM session_bindings WHERE conversation_id = ${id}`
    })
    return WorkspaceStore.of({
      register: (w) =>
        encode(w).pipe(
          Effect.zip(Clock.currentTimeMillis),
          Effect.flatMap(([definition, now]) => sql`INSERT INTO workspaces (id, definition, created_at) VALUES (${w.id}, ${definition}, ${now})
            ON CONFLICT (id) DO UPDATE SET definition = excluded.definition`),
          Effect.asVoid,
          Effect.orDie
        ),
      registered: all(undefined).pipe(Effect.map((rows) => rows.map((r) => r.definition)), Effect.orDie),
      get: (id) => one(id).pipe(Effect.map(Option.map((r) => r.definition)), Effect.orDie),
      bindSession: (b) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => sql`INSERT INTO session_bindings (conversation_id, kind, ref, updated_at) VALUES (${b.conversationId}, ${b.kind}, ${b.ref}, ${now})
          ON CONFLICT (conversation_id) DO UPDATE SET kind = excluded.kind, ref = excluded.ref, updated_at = excluded.updated_at`).pipe(Effect.asVoid, Effect.orDie),
      sessionBinding: (id) => binding(id).pipe(Effect.map(Option.map((r) => SessionBinding.make(r))), Effect.orDie),
      unbindSession: (id) => sql`DELETE FROM session_bindings WHERE conversation_id = ${id}`.pipe(Effect.asVoid, Effect.orDie)
    })
  })

  static readonly layer = Layer.effect(WorkspaceStore, WorkspaceStore.make)
}
