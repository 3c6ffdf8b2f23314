/** The `pynchy` command: the CLI over the default stack, run by NodeRuntime.runMain. */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Effect, Layer } from "effect"
import { makeCli } from "../src/cli/main.js"
import * as Logging from "../src/cli/logger.js"
import { ClientLive, makeHostLive } from "./default.js"

// Everything the host creates (database, WAL, status, sockets, session folders) is its owner's
// alone unless a mode says otherwise.
process.umask(0o077)

const cli = makeCli({ makeHost: makeHostLive, client: ClientLive })

cli(process.argv).pipe(
  Effect.provide(Layer.merge(NodeContext.layer, Logging.layer)),
  NodeRuntime.runMain({ disablePrettyLogger: true })
)
