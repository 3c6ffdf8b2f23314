/**
 * Runs `pynchy mcp` on its own (`npx tsx src/runtimes/agent-session/mcp-main.ts [--agent id]`):
 * the entry the tests spawn until the command is part of the `pynchy` binary.
 */
import { Command } from "@effect/cli"
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { mcp } from "../../cli/commands/mcp.js"
import * as Logging from "../../cli/logger.js"
import { VERSION } from "../../version.js"

Command.run(mcp, { name: "pynchy-mcp", version: VERSION })(process.argv).pipe(
  Effect.provide(Layer.merge(NodeContext.layer, Logging.layer)),
  NodeRuntime.runMain({ disablePrettyLogger: true })
)
