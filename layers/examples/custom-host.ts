/**
 * A custom host: the default stack with three layers swapped. It keeps everything in memory,
 * answers with the scripted agent, and delivers replies to a function instead of a platform —
 * the shape of an embedding (a bot inside another Node program) or of a test harness.
 *
 *   npx tsx layers/examples/custom-host.ts
 */
import { Effect, Either, Layer, Logger, LogLevel } from "effect"
import { tmpdir } from "node:os"
import * as ScriptedExecutor from "../../src/pipeline/ScriptedExecutor.js"
import { decodeConfig, HostConfig } from "../../src/config/HostConfig.js"
import * as Database from "../../src/db/Database.js"
import { DeployRollback } from "../../src/host/DeployRollback.js"
import type { OutboundDelivery } from "../../src/contracts/channel.js"
import { Ingest } from "../../src/pipeline/Ingest.js"
import { definePlugin } from "../../src/contracts/plugin.js"
import { PluginRegistry } from "../../src/plugins/PluginRegistry.js"
import { buildRegistry } from "../../src/plugins/registry.js"
import { ConnectionRuntimeSources } from "../../src/runtimes/ConnectionRuntimes.js"
import { makeStack } from "../stack.js"
import { AgentSessionRuntimeRegistry } from "../../src/runtimes/agent-session/AgentSessionRuntimeRegistry.js"
import { AgentSessions } from "../../src/runtimes/agent-session/AgentSessions.js"
import { AttachmentStore } from "../../src/runtimes/agent-session/AttachmentStore.js"

/** Builds the custom host; every reply goes to `onReply`. */
export const makeEmbeddedHost = (onReply: (d: OutboundDelivery) => void) => {
  const config = Either.getOrThrow(decodeConfig({
    dataDir: tmpdir(),
    workspaces: [{ id: "main", instructions: "You are embedded." }],
    routes: [{ connection: "app", place: "*", workspace: "main" }]
  }, "embedded"))
  // The one plugin this host has: a channel for the `app` connection that calls back into the program.
  const app = definePlugin({
    name: "app",
    createChannel: () => ({ name: "app", idempotentResends: true, send: async (d) => onReply(d) })
  })
  return makeStack({
    config: HostConfig.layerFrom(config),
    plugins: Layer.effect(PluginRegistry, buildRegistry([{ plugin: app, source: { _tag: "module", path: import.meta.filename, specifier: "layers/examples/custom-host.ts" } }])),
    database: Database.layerMemory,
    executor: ScriptedExecutor.layer(),
    runtimes: Layer.succeed(ConnectionRuntimeSources, []),
    rollback: DeployRollback.layerNoop,
    // No external agent sessions: attachments in memory, no runtimes registered.
    agentSessions: Layer.provideMerge(AgentSessions.layer, Layer.merge(AttachmentStore.layerMemory, AgentSessionRuntimeRegistry.layer))
  }).pipe(Layer.provide(Logger.minimumLogLevel(LogLevel.Warning)))
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const program = Effect.gen(function* () {
    const replies: Array<string> = []
    const host = yield* Layer.build(makeEmbeddedHost((d) => replies.push(d.text)))
    const { ingest } = yield* Effect.provide(Ingest, host)
    yield* ingest({ connection: "app", place: "user-1", providerEventId: "evt-1", sender: "ada", text: "hello from my app" })
    while (replies.length === 0) yield* Effect.sleep("5 millis")
    console.log(`reply: ${replies[0]}`)
  })
  Effect.runPromise(Effect.scoped(program))
}
