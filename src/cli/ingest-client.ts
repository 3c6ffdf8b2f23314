import { Layer } from "effect"
import { Approvals } from "../actions/Approvals.js"
import { EventBus } from "../events/EventBus.js"
import { EventLog } from "../observers/EventLog.js"
import { Observers } from "../observers/Observers.js"
import { remoteSignalLayer } from "../host/ControlSocket.js"
import { InboundCommitted } from "../pipeline/InboundCommitted.js"
import { Ingest } from "../pipeline/Ingest.js"
import { Workspaces } from "../pipeline/Workspaces.js"

/**
 * The durable ingest of a process that is not the host (`pynchy send`, the MCP server): it routes
 * and commits, decides approvals (a reply `approve <code>` committed here decides the row in the
 * database before the process exits, and the host waiting on it reads the row:
 * Approvals.layerReplies), and wakes the running host through its control socket. What it
 * ingests or refuses (no route) goes to the event log, as in the host.
 * Needs HostConfig, the stores and their SqlClient.
 */
export const ingestClient = Layer.provideMerge(
  Ingest.layer,
  Layer.mergeAll(Workspaces.layer, remoteSignalLayer, Approvals.layerReplies)
).pipe(Layer.provideMerge(InboundCommitted.layer), Layer.provideMerge(Layer.provideMerge(EventLog.layer, Layer.provideMerge(Observers.layer, EventBus.layer))))
