import { ddl } from "../dialect.js"

/**
 * Which client owns a place of a connection (the HTTP API: the token that first wrote to it,
 * src/db/PlaceOwnerStore.ts). The primary key makes the first claim the only one, whichever host
 * or request makes it.
 */
export const m0018_place_owners = ddl`CREATE TABLE place_owners (
    connection TEXT NOT NULL,
    place TEXT NOT NULL,
    owner TEXT NOT NULL,
    since INTEGER NOT NULL,
    PRIMARY KEY (connection, place)
  )${{ sqlite: " WITHOUT ROWID", pg: "" }}`
