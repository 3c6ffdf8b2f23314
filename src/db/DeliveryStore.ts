import { SqlClient, SqlSchema } from "@effect/sql"
import { Clock, Context, Effect, Layer, Option, Schema } from "effect"
import type { AudioFormat } from "../domain/audio.js"
import { Delivery, type DeliveryKind } from "../domain/delivery.js"
import { ConversationId, DeliveryId, TurnId } from "../domain/ids.js"
import { jsonField, jsonRows } from "./dialect.js"

const DeliveryRow = Schema.Struct({ ...Delivery.fields, traceParent: Schema.NullOr(Schema.String) })
const columns = `id, idempotency_key AS "idempotencyKey", conversation_id AS "conversationId", turn_id AS "turnId", kind, text, status,
  attempts, error, created_at AS "createdAt", updated_at AS "updatedAt", trace_parent AS "traceParent"`

export interface NewDelivery {
  readonly idempotencyKey: string
  readonly conversationId: ConversationId
  readonly turnId: TurnId | null
  readonly kind: DeliveryKind
  readonly text: string
  /** The W3C trace context its send continues. */
  readonly traceParent?: string | null | undefined
}

/** A delivery's audio (migration 0015). */
export interface StoredAudio {
  readonly format: AudioFormat
  readonly bytes: Uint8Array
}

/** A file a delivery carries (migration 0017), numbered from 1. */
export interface StoredFile {
  readonly n: number
  readonly name: string
  readonly mimeType: string
  readonly bytes: Uint8Array
}

export declare namespace DeliveryStore {
  /** Outbound sends: a row per send, written before the channel is called. */
  export interface Service {
    /**
     * Inserts the deliveries whose key is new (a known key is left as it is) and returns all of
     * them, each with whether this call created it.
     */
    readonly record: (items: ReadonlyArray<NewDelivery>) => Effect.Effect<ReadonlyArray<{ readonly delivery: Delivery; readonly created: boolean }>>
    /** Counts a channel call about to happen; the count survives a crash, so a resend is known to be one. */
    readonly beginAttempt: (id: DeliveryId) => Effect.Effect<number>
    /** pending → sent | failed | unknown (only from pending: outcomes are final). */
    readonly settle: (id: DeliveryId, status: "sent" | "failed" | "unknown", error?: string) => Effect.Effect<boolean>
    readonly pending: Effect.Effect<ReadonlyArray<Delivery>>
    /** Pending deliveries of one conversation, in the order they were written. */
    readonly pendingOf: (conversationId: ConversationId) => Effect.Effect<ReadonlyArray<Delivery>>
    /** Conversations with pending deliveries, optionally only those on one connection. */
    readonly conversationsWithPending: (connection?: string) => Effect.Effect<ReadonlyArray<ConversationId>>
    readonly byConversation: (conversationId: ConversationId, limit: number) => Effect.Effect<ReadonlyArray<Delivery>>
    readonly countByStatus: Effect.Effect<Record<string, number>>
    /**
     * The read side of a pull channel (the HTTP API): deliveries of a conversation after an id,
     * oldest first, of the turns that handled (or hold a claim on) a message whose metadata
     * `client` is this one. A delivery is listed from the moment it is recorded, whatever its send.
     */
    readonly ofClient: (query: { readonly conversationId: ConversationId; readonly client: string; readonly after: number; readonly limit: number }) => Effect.Effect<ReadonlyArray<Delivery>>
    /** Whether a turn handles (or handled) a message of this client. */
    readonly turnOfClient: (turnId: TurnId, client: string) => Effect.Effect<boolean>
    /**
     * Claims one part of a delivery (`<idempotency key>#<n>`) before it is handed to a platform:
     * `claimed` for the first caller; otherwise how an earlier call left it (`sent`, or `sending`:
     * a call whose outcome is unknown). The claim is atomic: two callers never both get `claimed`.
     */
    readonly claimPart: (partKey: string) => Effect.Effect<"claimed" | "sending" | "sent">
    /**
     * Stores the audio of a delivery unless it has some already, and returns the stored one: a
     * delivery's audio is made once, and every send of it sends the same bytes.
     */
    readonly storeAudio: (deliveryKey: string, audio: StoredAudio) => Effect.Effect<StoredAudio>
    readonly audioOf: (deliveryKey: string) => Effect.Effect<Option.Option<StoredAudio>>
    /**
     * Stores the files of a delivery (numbered from 1, in order) unless it has some already: a
     * delivery's files are taken once, and every send of it sends the same bytes.
     */
    readonly storeFiles: (deliveryKey: string, files: ReadonlyArray<Omit<StoredFile, "n">>) => Effect.Effect<void>
    readonly filesOf: (deliveryKey: string) => Effect.Effect<ReadonlyArray<StoredFile>>
    /** The files (without their bytes) each of these deliveries carries; those with none are absent. */
    readonly fileLists: (deliveryKeys: ReadonlyArray<string>) => Effect.Effect<ReadonlyMap<string, ReadonlyArray<Omit<StoredFile, "bytes">>>>
    /** The format of the stored audio of each of these deliveries that has some. */
    readonly audioFormats: (deliveryKeys: ReadonlyArray<string>) => Effect.Effect<ReadonlyMap<string, AudioFormat>>
    /** A claimed part was accepted (`sent`), or surely not sent (`released`: a later resend claims it again). */
    readonly settlePart: (partKey: string, outcome: "sent" | "released") => Effect.Effect<void>
    /** When a part left `sending` was claimed (epoch millis), null for a part without a claim or already sent. */
    readonly partClaimedAt: (partKey: string) => Effect.Effect<number | null>
  }
}

export class DeliveryStore extends Context.Tag("pynchy/DeliveryStore")<DeliveryStore, DeliveryStore.Service>() {
  static readonly make = Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const byKeys = SqlSchema.findAll({
      Request: Schema.Array(Schema.String),
      Result: DeliveryRow,
      execute: (keys) => sql`SELECT ${sql.literal(columns)} FROM deliveries
        WHERE ${sql.in("idempotency_key", keys)} ORDER BY id`
    })
    const pendingRows = SqlSchema.findAll({
      Request: Schema.Void,
      Result: DeliveryRow,
      execute: () => sql`SELECT ${sql.literal(columns)} FROM deliveries WHERE status = 'pending' ORDER BY id`
    })
    const pendingOfRows = SqlSchema.findAll({
      Request: ConversationId,
      Result: DeliveryRow,
      execute: (id) => sql`SELECT ${sql.literal(columns)} FROM deliveries WHERE status = 'pending' AND conversation_id = ${id} ORDER BY id`
    })
    const conversationRows = SqlSchema.findAll({
      Request: Schema.Struct({ conversationId: ConversationId, limit: Schema.Int }),
      Result: DeliveryRow,
      execute: ({ conversationId, limit }) => sql`SELECT * FROM (SELECT ${sql.literal(columns)} FROM deliveries
        WHERE conversation_id = ${conversationId} ORDER BY id DESC LIMIT ${limit}) AS latest ORDER BY id`
    })

    const ofClientRows = SqlSchema.findAll({
      Request: Schema.Struct({ conversationId: ConversationId, client: Schema.String, after: Schema.Number, limit: Schema.Int }),
      Result: DeliveryRow,
      execute: ({ after, client, conversationId, limit }) => sql`SELECT ${sql.literal(columns)} FROM deliveries
        WHERE conversation_id = ${conversationId} AND id > ${after} AND turn_id IN (
          SELECT m.handled_by FROM messages m WHERE m.conversation_id = ${conversationId} AND m.direction = 'in'
            AND m.handled_by IS NOT NULL AND ${jsonField(sql, "m.metadata", "client")} = ${client}
          UNION SELECT dc.turn_id FROM delivery_claims dc JOIN messages m ON m.id = dc.message_id
            WHERE m.conversation_id = ${conversationId} AND ${jsonField(sql, "m.metadata", "client")} = ${client})
        ORDER BY id LIMIT ${limit}`
    })

    const audioRow = (r: { format: string; bytes: Uint8Array }): StoredAudio => ({ format: r.format as AudioFormat, bytes: new Uint8Array(r.bytes) })
    const audioOf = (deliveryKey: string) =>
      sql<{ format: string; bytes: Uint8Array }>`SELECT format, bytes FROM delivery_audio WHERE delivery_key = ${deliveryKey}`.pipe(
        Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), audioRow)),
        Effect.orDie
      )

    return DeliveryStore.of({
      storeFiles: (deliveryKey, files) =>
        files.length === 0 ? Effect.void : Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          yield* sql.withTransaction(Effect.forEach(files, (f, i) =>
            sql`INSERT INTO delivery_files (delivery_key, n, name, mime_type, bytes, created_at) VALUES (${deliveryKey}, ${i + 1}, ${f.name}, ${f.mimeType}, ${f.bytes}, ${now})
              ON CONFLICT (delivery_key, n) DO NOTHING`, { discard: true })).pipe(Effect.orDie)
        }),
      filesOf: (deliveryKey) =>
        sql<{ n: number | string; name: string; mimeType: string; bytes: Uint8Array }>`SELECT n, name, mime_type AS "mimeType", bytes FROM delivery_files
          WHERE delivery_key = ${deliveryKey} ORDER BY n`.pipe(
          Effect.map((rows) => rows.map((r) => ({ n: Number(r.n), name: r.name, mimeType: r.mimeType, bytes: new Uint8Array(r.bytes) }))),
          Effect.orDie
        ),
      fileLists: (keys) =>
        keys.length === 0
          ? Effect.succeed(new Map())
          : sql<{ key: string; n: number | string; name: string; mimeType: string }>`SELECT delivery_key AS "key", n, name, mime_type AS "mimeType" FROM delivery_files
              WHERE ${sql.in("delivery_key", keys)} ORDER BY delivery_key, n`.pipe(
            Effect.map((rows) => {
              const lists = new Map<string, Array<Omit<StoredFile, "bytes">>>()
              for (const r of rows) {
                const list = lists.get(r.key) ?? []
                list.push({ n: Number(r.n), name: r.name, mimeType: r.mimeType })
                lists.set(r.key, list)
              }
              return lists
            }),
            Effect.orDie
          ),
      storeAudio: (deliveryKey, audio) =>
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          yield* sql`INSERT INTO delivery_audio (delivery_key, format, bytes, created_at) VALUES (${deliveryKey}, ${audio.format}, ${audio.bytes}, ${now})
            ON CONFLICT (delivery_key) DO NOTHING`.pipe(Effect.orDie)
          return Option.getOrElse(yield* audioOf(deliveryKey), () => audio)
        }),
      audioOf,
      audioFormats: (keys) =>
        keys.length === 0
          ? Effect.succeed(new Map())
          : sql<{ key: string; format: AudioFormat }>`SELECT delivery_key AS "key", format FROM delivery_audio WHERE ${sql.in("delivery_key", keys)}`.pipe(
            Effect.map((rows) => new Map(rows.map((r) => [r.key, r.format]))),
            Effect.orDie
          ),
      claimPart: (partKey) =>
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          const claimed = yield* sql`INSERT INTO delivery_parts (part_key, status, updated_at) VALUES (${partKey}, 'sending', ${now})
            ON CONFLICT (part_key) DO NOTHING RETURNING part_key`
          if (claimed.length > 0) return "claimed" as const
          const rows = yield* sql<{ status: "sending" | "sent" }>`SELECT status FROM delivery_parts WHERE part_key = ${partKey}`
          return rows[0]?.status ?? "sending"
        }).pipe(Effect.orDie),
      settlePart: (partKey, outcome) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          outcome === "sent"
            ? sql`UPDATE delivery_parts SET status = 'sent', updated_at = ${now} WHERE part_key = ${partKey}`
            : sql`DELETE FROM delivery_parts WHERE part_key = ${partKey} AND status = 'sending'`).pipe(Effect.asVoid, Effect.orDie),
      partClaimedAt: (partKey) =>
        sql<{ at: number | string }>`SELECT updated_at AS at FROM delivery_parts WHERE part_key = ${partKey} AND status = 'sending'`.pipe(
          Effect.map((rows) => (rows[0] === undefined ? null : Number(rows[0].at))),
          Effect.orDie
        ),
      ofClient: (query) => ofClientRows(query).pipe(Effect.map((rows) => rows.map((r) => Delivery.make(r))), Effect.orDie),
      turnOfClient: (turnId, client) =>
        sql<{ n: number }>`SELECT 1 AS n FROM messages m WHERE ${jsonField(sql, "m.metadata", "client")} = ${client}
          AND (m.handled_by = ${turnId} OR m.id IN (SELECT message_id FROM delivery_claims WHERE turn_id = ${turnId})) LIMIT 1`.pipe(
          Effect.map((rows) => rows.length > 0),
          Effect.orDie
        ),
      record: Effect.fn("DeliveryStore.record")(function* (items) {
        if (items.length === 0) return []
        const now = yield* Clock.currentTimeMillis
        const values = jsonRows(sql, items.map((d) => [d.idempotencyKey, d.conversationId, d.turnId, d.kind, d.text, "pending", 0, now, now, d.traceParent ?? null]),
          ["text", "text", "int", "text", "text", "text", "int", "int", "int", "text"])
        const inserted = yield* sql<{ id: number }>`INSERT INTO deliveries (idempotency_key, conversation_id, turn_id, kind, text, status, attempts, created_at, updated_at, trace_parent)
          ${values}
          ON CONFLICT (idempotency_key) DO NOTHING RETURNING id`
        const created = new Set(inserted.map((r) => r.id))
        const rows = yield* byKeys(items.map((d) => d.idempotencyKey))
        return rows.map((r) => ({ delivery: Delivery.make(r), created: created.has(r.id) }))
      }, Effect.orDie),
      beginAttempt: (id) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => sql<{ attempts: number }>`UPDATE deliveries SET attempts = attempts + 1, updated_at = ${now} WHERE id = ${id} RETURNING attempts`).pipe(
          Effect.map((r) => r[0]?.attempts ?? 0),
          Effect.orDie
        ),
      settle: (id, status, error) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => sql`UPDATE deliveries SET status = ${status}, error = ${error ?? null}, updated_at = ${now}
          WHERE id = ${id} AND status = 'pending' RETURNING id`).pipe(Effect.map((r) => r.length > 0), Effect.orDie),
      pendingOf: (conversationId) =>
        pendingOfRows(conversationId).pipe(Effect.map((rows) => rows.map((r) => Delivery.make(r))), Effect.orDie),
      conversationsWithPending: (connection) =>
        (connection === undefined
          ? sql<{ id: string }>`SELECT DISTINCT conversation_id AS id FROM deliveries WHERE status = 'pending'`
          : sql<{ id: string }>`SELECT DISTINCT d.conversation_id AS id FROM deliveries d JOIN conversations c ON c.id = d.conversation_id
              WHERE d.status = 'pending' AND c.connection = ${connection}`
        ).pipe(Effect.map((rows) => rows.map((r) => ConversationId.make(r.id))), Effect.orDie),
      pending: pendingRows(undefined).pipe(Effect.map((rows) => rows.map((r) => Delivery.make(r))), Effect.orDie),
      byConversation: (conversationId, limit) =>
        conversationRows({ conversationId, limit }).pipe(Effect.map((rows) => rows.map((r) => Delivery.make(r))), Effect.orDie),
      countByStatus: sql<{ status: string; n: number }>`SELECT status, COUNT(*) AS n FROM deliveries GROUP BY status`.pipe(
        Effect.map((rows) => Object.fromEntries(rows.map((r) => [r.status, r.n]))),
        Effect.orDie
      )
    })
  })

  static readonly layer = Layer.effect(DeliveryStore, DeliveryStore.make)
}
