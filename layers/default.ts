/**
 * The default host: what `pynchy start` runs. Each step is provided to the next, so startup runs
 * top to bottom and shutdown runs bottom to top; a failure unwinds what came before it.
 */
import { Layer } from "effect"
import { HostConfig } from "../src/config/HostConfig.js"
import * as Database from "../src/db/Database.js"
import * as Stores from "../src/db/Stores.js"
import { Host } from "../src/host/Host.js"
import { HostIdentity } from "../src/host/HostIdentity.js"
import { logged } from "../src/host/lifecycle-log.js"

export const ConfigLive = logged("config", Layer.merge(HostConfig.layer, HostIdentity.layer))
export const DatabaseLive = logged("database", Layer.provideMerge(Stores.layer, Database.layer))

export const HostLive = logged("host", Host.layer).pipe(
  Layer.provideMerge(DatabaseLive),
  Layer.provideMerge(ConfigLive)
)
