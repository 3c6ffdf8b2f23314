import { ddl } from "../dialect.js"

/**
 * Which cluster runner last took each connection (src/cluster): written by the singleton when it
 * starts on a host, read by `pynchy status` on any host. The cluster's own tables (cluster_runners,
 * cluster_locks, cluster_messages, cluster_replies) are made by @effect/cluster itself.
 */
export const m0016_cluster_connections = ddl`CREATE TABLE cluster_connections (
    connection TEXT PRIMARY KEY,
    runner TEXT NOT NULL,
    epoch TEXT NOT NULL,
    since INTEGER NOT NULL
  )`
