/**
 * The host stack as a function of the parts a composition chooses (database, executor, extra
 * channels). Each step is provided to the next, so startup runs top to bottom, shutdown bottom
 * to top, and a failure unwinds what came before it. Siblings merged at one step hold no
 * resources whose order matters.
 */
import { Layer } from "effect"
import * as BuiltinChannels from "../src/channels/BuiltinChannels.js"
import type { HostConfig } from "../src/config/HostConfig.js"
import type { SqlClient } from "@effect/sql"
import * as Stores from "../src/db/Stores.js"
import { Host } from "../src/host/Host.js"
import { HostIdentity } from "../src/host/HostIdentity.js"
import * as ControlSocket from "../src/host/ControlSocket.js"
import { logged } from "../src/host/lifecycle-log.js"
import type { AgentExecutor, ExecutorLiveness } from "../src/pipeline/AgentExecutor.js"
import { Channels } from "../src/pipeline/Channels.js"
import { Ingest } from "../src/pipeline/Ingest.js"
import { Outbox } from "../src/pipeline/Outbox.js"
import { Recovery } from "../src/pipeline/Recovery.js"
import { TurnQueue } from "../src/pipeline/TurnQueue.js"
import { TurnRunner } from "../src/pipeline/TurnRunner.js"
import { Workspaces } from "../src/pipeline/Workspaces.js"

export interface StackParts<EC, ED, EE> {
  readonly config: Layer.Layer<HostConfig, EC>
  readonly database: Layer.Layer<SqlClient.SqlClient, ED, HostConfig>
  readonly executor: Layer.Layer<AgentExecutor | ExecutorLiveness, EE, HostConfig>
}

export const makeStack = <EC, ED, EE>(parts: StackParts<EC, ED, EE>) => {
  const config = logged("config", Layer.merge(parts.config, HostIdentity.layer))
  const database = logged("database", Layer.provideMerge(Stores.layer, parts.database))
  const executor = logged("executor", parts.executor)
  const outbox = Layer.provideMerge(Outbox.layer, Layer.merge(Channels.layer, Workspaces.layer))
  const queue = logged("queue", Layer.provideMerge(TurnQueue.layer, Layer.provideMerge(TurnRunner.layer, outbox)))
  const pipeline = logged("pipeline", Layer.provideMerge(Layer.merge(Ingest.layer, Recovery.layer), TurnQueue.signalLayer))
  const control = logged("control socket", ControlSocket.layer)
  const channels = logged("channels", BuiltinChannels.layer)
  return logged("host", Host.layer).pipe(
    Layer.provideMerge(channels),
    Layer.provideMerge(control),
    Layer.provideMerge(pipeline),
    Layer.provideMerge(queue),
    Layer.provideMerge(executor),
    Layer.provideMerge(database),
    Layer.provideMerge(config)
  )
}

/**
 * What a short-lived command needs to write into a host's database: config, database, stores,
 * routing and the durable ingest, whose wake-ups go to the running host's control socket.
 */
export const makeClient = <EC, ED>(parts: Pick<StackParts<EC, ED, never>, "config" | "database">) => {
  const base = Layer.provideMerge(Layer.provideMerge(Stores.layer, parts.database), parts.config)
  return Layer.provideMerge(Ingest.layer, Layer.provideMerge(Layer.merge(Workspaces.layer, ControlSocket.remoteSignalLayer), base))
}
