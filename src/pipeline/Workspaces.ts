import { Context, Effect, Either, Layer, Option } from "effect"
import { HostConfig } from "../config/HostConfig.js"
import { WorkspaceStore } from "../db/WorkspaceStore.js"
import { NoRoute } from "../domain/errors.js"
import type { ConnectionName, WorkspaceId } from "../domain/ids.js"
import type { Route, Workspace } from "../domain/workspace.js"

/** The route for (connection, place): an exact place wins over `*`; disabled routes do not match. */
export const resolveRoute = (routes: ReadonlyArray<Route>, connection: string, place: string): Option.Option<Route> =>
  Option.orElse(
    Option.fromNullable(routes.find((r) => r.enabled && r.connection === connection && r.place === place)),
    () => Option.fromNullable(routes.find((r) => r.enabled && r.connection === connection && r.place === "*"))
  )

export declare namespace Workspaces {
  /** Workspaces from config plus those registered at runtime (durable), and routing. */
  export interface Service {
    readonly get: (id: WorkspaceId) => Effect.Effect<Option.Option<Workspace>>
    readonly list: Effect.Effect<ReadonlyArray<Workspace>>
    /** Durable: survives a restart. A config workspace of the same id still wins. */
    readonly register: (workspace: Workspace) => Effect.Effect<void>
    /** Synchronous (routes are config): Ingest routes a burst's payloads in one loop. */
    readonly route: (connection: ConnectionName, place: string) => Either.Either<Route, NoRoute>
    readonly routesOf: (connection: string) => ReadonlyArray<Route>
  }
}

export class Workspaces extends Context.Tag("pynchy/Workspaces")<Workspaces, Workspaces.Service>() {
  static readonly make = Effect.gen(function* () {
    const { config } = yield* HostConfig
    const store = yield* WorkspaceStore
    const fromConfig = new Map(config.workspaces.map((w) => [w.id as string, w]))
    return Workspaces.of({
      get: (id) => {
        const w = fromConfig.get(id)
        return w !== undefined ? Effect.succeed(Option.some(w)) : store.get(id)
      },
      list: Effect.map(store.registered, (registered) => [
        ...config.workspaces,
        ...registered.filter((w) => !fromConfig.has(w.id))
      ]),
      register: store.register,
      route: (connection, place) =>
        Option.match(resolveRoute(config.routes, connection, place), {
          onNone: () => Either.left(new NoRoute({ connection, place, disabled: config.routes.some((r) => !r.enabled && r.connection === connection && (r.place === place || r.place === "*")) })),
          onSome: Either.right
        }),
      routesOf: (connection) => config.routes.filter((r) => r.enabled && r.connection === connection)
    })
  })

  static readonly layer = Layer.effect(Workspaces, Workspaces.make)
}
