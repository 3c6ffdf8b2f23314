import { SqlClient } from "@effect/sql"
import { Clock, Context, Effect, Layer, Option } from "effect"

export declare namespace PlaceOwnerStore {
  /**
   * Who owns a place of a connection (the HTTP API: the client of the token that first wrote
   * to it). An owner is never replaced: the first claim wins, across requests, restarts and hosts.
   */
  export interface Service {
    /** Claims the place for `owner` unless it has an owner; answers the owner it has now (the claimer's or the earlier one's). */
    readonly claim: (input: { readonly connection: string; readonly place: string; readonly owner: string }) => Effect.Effect<string>
    readonly ownerOf: (input: { readonly connection: string; readonly place: string }) => Effect.Effect<Option.Option<string>>
  }
}

export class PlaceOwnerStore extends Context.Tag("pynchy/PlaceOwnerStore")<PlaceOwnerStore, PlaceOwnerStore.Service>() {
  static readonly make = Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const ownerOf = ({ connection, place }: { readonly connection: string; readonly place: string }) =>
      sql<{ owner: string }>`SELECT owner FROM place_owners WHERE connection = ${connection} AND place = ${place}`.pipe(
        Effect.map((rows) => Option.fromNullable(rows[0]?.owner)),
        Effect.orDie
      )
    return PlaceOwnerStore.of({
      ownerOf,
      // The primary key decides a race: the second insert does nothing, and both read the first's owner.
      claim: ({ connection, owner, place }) =>
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          yield* sql`INSERT INTO place_owners (connection, place, owner, since) VALUES (${connection}, ${place}, ${owner}, ${now})
            ON CONFLICT (connection, place) DO NOTHING`.pipe(Effect.orDie)
          return Option.getOrElse(yield* ownerOf({ connection, place }), () => owner)
        })
    })
  })

  static readonly layer = Layer.effect(PlaceOwnerStore, PlaceOwnerStore.make)
}
