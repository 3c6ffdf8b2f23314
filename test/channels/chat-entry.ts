/**
 * The `chat` command over the default host pieces, for the tmux test (the real CLI wires the same
 * command in layers/). Run: `node --import tsx test/channels/chat-entry.ts chat`.
 */
import { Command } from "@effect/cli"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import { makeStack } from "../../layers/stack.js"
import * as ScriptedExecutor from "../../src/pipeline/ScriptedExecutor.js"
import { chat } from "../../src/cli/commands/chat.js"
import * as Logging from "../../src/cli/logger.js"
import { HostConfig } from "../../src/config/HostConfig.js"
import * as Database from "../../src/db/Database.js"
import { DeployRollback } from "../../src/host/DeployRollback.js"
import { PluginRegistry } from "../../src/plugins/PluginRegistry.js"
import { ConnectionRuntimeSources, type RuntimeEntry } from "../../src/runtimes/ConnectionRuntimes.js"
import { AgentSessions } from "../../src/runtimes/agent-session/AgentSessions.js"
import { AttachmentStore } from "../../src/runtimes/agent-session/AttachmentStore.js"
import { layerFromEnv } from "../../src/runtimes/agent-session/loader.js"
import { holdUntilFile, streamingExecutor } from "../support/streaming.js"
import { BUILTINS } from "../../src/builtins/list.js"

const makeHost = (extra: ReadonlyArray<RuntimeEntry>) =>
  makeStack({
    config: HostConfig.layer,
    plugins: PluginRegistry.layerWith({ builtins: BUILTINS }),
    database: Database.layer,
    // PYNCHY_TEST_STREAM_HOLD=<dir>: a streaming executor whose turns wait for a release file there.
    // PYNCHY_TEST_REPLY_FILE=<file>: a streaming executor whose reply is that file's text (a hostile model's).
    executor: process.env.PYNCHY_TEST_STREAM_HOLD
      ? streamingExecutor({ pieces: 4, hold: holdUntilFile(process.env.PYNCHY_TEST_STREAM_HOLD) })
      : process.env.PYNCHY_TEST_REPLY_FILE
      ? streamingExecutor({ pieces: 4, replyOf: () => fs.readFileSync(process.env.PYNCHY_TEST_REPLY_FILE!, "utf8") })
      : ScriptedExecutor.layerConfig,
    runtimes: Layer.effect(ConnectionRuntimeSources, Effect.map(PluginRegistry, (r) => [...r.connectionRuntimes.map((c) => ({ plugin: c.plugin, value: c.value })), ...extra])),
    agentSessions: Layer.provideMerge(AgentSessions.layer, Layer.merge(AttachmentStore.layerDatabase, layerFromEnv)),
    rollback: DeployRollback.layerNoop
  })

Command.run(Command.make("pynchy").pipe(Command.withSubcommands([chat(makeHost)])), { name: "pynchy", version: "test" })(process.argv).pipe(
  Effect.provide(Layer.merge(NodeContext.layer, Logging.layer)),
  NodeRuntime.runMain({ disablePrettyLogger: true })
)
