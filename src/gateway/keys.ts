/**
 * Gateway keys for the user's own tools (`pynchy keys create`), LiteLLM's virtual keys: a key is
 * `pgk_` + 32 random bytes, printed once; the store keeps its SHA-256 digest, the models it may
 * use, its daily token budget and its expiry. Turn tokens and keys share one admission path;
 * a key's usage is accounted as `key:<name>`.
 */
import { SqlClient } from "@effect/sql"
import { Clock, Context, Effect, Layer, Option, Redacted, Schema } from "effect"
import * as crypto from "node:crypto"

export const KEY_PREFIX = "pgk_"

export const KeyName = Schema.String.pipe(
  Schema.pattern(/^[a-z0-9][a-z0-9._-]{0,63}$/, { message: () => "must be 1-64 characters of a-z, 0-9, '.', '_' or '-', starting with a letter or digit" })
)

export interface KeyRecord {
  readonly name: string
  readonly digest: string
  /** Public model names it may use; null: all. */
  readonly models: ReadonlyArray<string> | null
  readonly dailyTokens: number | null
  /** Epoch millis; null: never. */
  readonly expiresAt: number | null
  readonly createdAt: number
}

/** The name keys are accounted under (usage events, budgets, status). */
export const keyAccount = (name: string) => `key:${name}`

export const digestOf = (key: string): string => crypto.createHash("sha256").update(key, "utf8").digest("hex")

export class KeyExists extends Schema.TaggedError<KeyExists>()("KeyExists", { name: Schema.String }) {
  override get message() {
    return `a key named '${this.name}' exists: revoke it first or pick another name`
  }
}

export declare namespace GatewayKeyStore {
  export interface CreateInput {
    readonly name: string
    readonly models?: ReadonlyArray<string> | undefined
    readonly dailyTokens?: number | undefined
    readonly expiresAt?: number | undefined
  }
  /** The keys in the host database. */
  export interface Service {
    /** Makes a key and stores its digest; the key is returned once and never stored. */
    readonly create: (input: CreateInput) => Effect.Effect<{ readonly key: Redacted.Redacted<string>; readonly record: KeyRecord }, KeyExists>
    readonly list: Effect.Effect<ReadonlyArray<KeyRecord>>
    /** False when no key has that name. */
    readonly revoke: (name: string) => Effect.Effect<boolean>
  }
}

interface Row {
  readonly name: string
  readonly digest: string
  readonly models: string | null
  readonly daily_tokens: number | null
  readonly expires_at: number | null
  readonly created_at: number
}

const recordOf = (r: Row): KeyRecord => ({
  name: r.name,
  digest: r.digest,
  models: r.models === null ? null : (JSON.parse(r.models) as Array<string>),
  dailyTokens: r.daily_tokens,
  expiresAt: r.expires_at,
  createdAt: r.created_at
})

export class GatewayKeyStore extends Context.Tag("pynchy/GatewayKeyStore")<GatewayKeyStore, GatewayKeyStore.Service>() {
  static readonly make = Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const list = sql<Row>`SELECT name, digest, models, daily_tokens, expires_at, created_at FROM gateway_keys ORDER BY name`.pipe(
      Effect.map((rows) => rows.map(recordOf)),
      Effect.orDie
    )
    const create = Effect.fn("GatewayKeyStore.create")(function* (input: GatewayKeyStore.CreateInput) {
      const key = KEY_PREFIX + crypto.randomBytes(32).toString("base64url")
      const record: KeyRecord = {
        name: input.name,
        digest: digestOf(key),
        models: input.models !== undefined && input.models.length > 0 ? [...input.models] : null,
        dailyTokens: input.dailyTokens ?? null,
        expiresAt: input.expiresAt ?? null,
        createdAt: yield* Clock.currentTimeMillis
      }
      const existing = yield* sql<{ n: number }>`SELECT COUNT(*) AS n FROM gateway_keys WHERE name = ${record.name}`.pipe(Effect.orDie)
      if ((existing[0]?.n ?? 0) > 0) return yield* new KeyExists({ name: record.name })
      yield* sql`INSERT INTO gateway_keys (name, digest, models, daily_tokens, expires_at, created_at)
        VALUES (${record.name}, ${record.digest}, ${record.models === null ? null : JSON.stringify(record.models)},
                ${record.dailyTokens}, ${record.expiresAt}, ${record.createdAt})`.pipe(Effect.orDie)
      return { key: Redacted.make(key), record }
    })
    const revoke = Effect.fn("GatewayKeyStore.revoke")(function* (name: string) {
      const before = yield* sql<{ n: number }>`SELECT COUNT(*) AS n FROM gateway_keys WHERE name = ${name}`.pipe(Effect.orDie)
      yield* sql`DELETE FROM gateway_keys WHERE name = ${name}`.pipe(Effect.orDie)
      return (before[0]?.n ?? 0) > 0
    })
    return GatewayKeyStore.of({ create, list, revoke })
  })

  static readonly layer = Layer.effect(GatewayKeyStore, GatewayKeyStore.make)
}

/** `30d`, `12h`, `90m`: a lifetime in millis. */
export const parseLifetime = (text: string): Option.Option<number> => {
  const m = /^(\d{1,6})([dhm])$/.exec(text.trim())
  if (m === null) return Option.none()
  const unit = m[2] === "d" ? 86_400_000 : m[2] === "h" ? 3_600_000 : 60_000
  return Number(m[1]) > 0 ? Option.some(Number(m[1]) * unit) : Option.none()
}
