import { Args, Command, Options } from "@effect/cli"
import { Clock, Console, Effect, Layer, Option, Redacted, Schema } from "effect"
import { HostConfig } from "../../config/HostConfig.js"
import * as Database from "../../db/Database.js"
import { GatewayKeyStore, KeyName, keyAccount, parseLifetime } from "../../gateway/keys.js"
import { reloadHostKeys } from "../../host/ControlSocket.js"

/**
 * The key store of the host database, opened as start opens it (the data dir and database are
 * created on a first run); a running host is told to read it again after a change.
 */
const withStore = <A, E>(f: (store: GatewayKeyStore.Service, dataDir: string) => Effect.Effect<A, E>) =>
  Effect.gen(function* () {
    const host = yield* HostConfig.load
    return yield* Effect.flatMap(GatewayKeyStore, (store) => f(store, host.dataDir)).pipe(
      Effect.provide(Layer.provide(GatewayKeyStore.layer, Layer.provide(Database.layer, Layer.succeed(HostConfig, host))))
    )
  })

const failWith = (message: string) => Console.error(message).pipe(Effect.zipRight(Effect.sync(() => (process.exitCode = 1))))

const name = Options.text("name").pipe(Options.withDescription("What the key is for (a-z 0-9 . _ -): usage is accounted as key:<name>."))
const models = Options.text("models").pipe(Options.optional, Options.withDescription("Public model names it may use, comma separated; all when absent."))
const dailyTokens = Options.integer("daily-tokens").pipe(Options.optional, Options.withDescription("Tokens it may spend per UTC day."))
const expires = Options.text("expires").pipe(Options.optional, Options.withDescription("Lifetime: 30d, 12h or 90m; never when absent."))

const create = Command.make("create", { name, models, dailyTokens, expires }, (o) =>
  Effect.gen(function* () {
    if (!Schema.is(KeyName)(o.name)) return yield* failWith("--name: must be 1-64 characters of a-z, 0-9, '.', '_' or '-', starting with a letter or digit")
    const lifetime = Option.map(o.expires, parseLifetime)
    if (Option.isSome(lifetime) && Option.isNone(lifetime.value)) return yield* failWith("--expires: expected a lifetime such as 30d, 12h or 90m")
    if (Option.isSome(o.dailyTokens) && o.dailyTokens.value <= 0) return yield* failWith("--daily-tokens: expected a positive number")
    const now = yield* Clock.currentTimeMillis
    const expiresAt = Option.flatten(lifetime).pipe(Option.map((ms) => now + ms), Option.getOrUndefined)
    const list = Option.map(o.models, (m) => m.split(",").map((s) => s.trim()).filter((s) => s !== "")).pipe(Option.getOrUndefined)
    yield* withStore((store, dataDir) =>
      Effect.gen(function* () {
        const { key, record } = yield* store.create({ name: o.name, models: list, dailyTokens: Option.getOrUndefined(o.dailyTokens), expiresAt })
        const told = yield* reloadHostKeys(dataDir)
        // The key goes to stdout alone (scripts capture it); everything else to stderr.
        yield* Console.log(Redacted.value(key))
        yield* Console.error(`key '${record.name}' created: shown once, only its digest is stored; usage is accounted as ${keyAccount(record.name)}` +
          (told ? "; the running host accepts it now" : "; no host is running: it is accepted from the next start"))
      })
    ).pipe(Effect.catchTag("KeyExists", (e) => failWith(e.message)))
  })
).pipe(Command.withDescription("Make a gateway key for your own tools (OpenAI/Anthropic SDKs); it is printed once."))

const list = Command.make("list", {}, () =>
  withStore((store) =>
    Effect.gen(function* () {
      const keys = yield* store.list
      const now = yield* Clock.currentTimeMillis
      if (keys.length === 0) return yield* Console.log("no keys (pynchy keys create --name <name>)")
      for (const k of keys) {
        const expiry = k.expiresAt === null ? "never expires" : k.expiresAt <= now ? `expired ${new Date(k.expiresAt).toISOString()}` : `expires ${new Date(k.expiresAt).toISOString()}`
        yield* Console.log([
          k.name,
          `models: ${k.models === null ? "all" : k.models.join(",")}`,
          `daily tokens: ${k.dailyTokens ?? "unlimited"}`,
          expiry,
          `created ${new Date(k.createdAt).toISOString()}`
        ].join("  "))
      }
    })
  )
).pipe(Command.withDescription("The gateway keys: name, models, daily budget, expiry (never the key)."))

const revoke = Command.make("revoke", { name: Args.text({ name: "name" }) }, ({ name }) =>
  withStore((store, dataDir) =>
    Effect.gen(function* () {
      if (!(yield* store.revoke(name))) return yield* failWith(`no key named '${name}'`)
      const told = yield* reloadHostKeys(dataDir)
      yield* Console.log(`key '${name}' revoked${told ? ": the running host refuses it now" : ""}`)
    })
  )
).pipe(Command.withDescription("Revoke a gateway key: a running host refuses it at once and cuts its requests in flight."))

export const keys = Command.make("keys").pipe(
  Command.withDescription("Gateway keys for your own tools: create, list, revoke."),
  Command.withSubcommands([create, list, revoke])
)
