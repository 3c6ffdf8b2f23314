/** A files test host: a runtime that ingests through the plugin contract and a channel that takes files. */
import { Effect, Either, Layer } from "effect"
import { randomUUID } from "node:crypto"
import { decodeConfig } from "../../src/config/HostConfig.js"
import { ExecutorId } from "../../src/domain/ids.js"
import { AgentExecutor, ExecutorLiveness, TurnFailed } from "../../src/pipeline/AgentExecutor.js"
import type { OutboundDelivery } from "../../src/contracts/channel.js"
import type { ConnectionRuntime, ConnectionRuntimeContext } from "../../src/contracts/connection-runtime.js"

export const filesConfig = (dir: string, files: Record<string, unknown> = { maxBytes: 1_000, maxFiles: 3 }, extra: { readonly workspace?: Record<string, unknown>; readonly [key: string]: unknown } = {}) => {
  const { workspace, ...rest } = extra
  return Either.getOrThrow(decodeConfig({
    dataDir: dir,
    workspaces: [{ id: "main", instructions: "test", ...workspace }],
    routes: [{ connection: "files", place: "*", workspace: "main" }],
    connections: {},
    files,
    ...rest
  }, "test config"))
}

/** The runtime's context once started (to ingest through), and what its channel was sent. */
export const filesRuntime = () => {
  const sent: Array<OutboundDelivery> = []
  let context: ConnectionRuntimeContext | undefined
  const runtime: ConnectionRuntime = {
    name: "files",
    start: async (ctx) => {
      context = ctx
      ctx.channels.bind({ name: "files", idempotentResends: true, files: true, send: async (d) => void sent.push(d) })
    },
    close: async () => {},
    isReady: () => context !== undefined
  }
  return { entry: { plugin: "files-test", value: runtime }, sent, context: () => context! }
}

/**
 * An in-process agent that records what it was given and answers `saw: <texts>`; before that it
 * runs `act` (a test writes into the workspace outbox there, as an agent would).
 */
export const recordingAgent = (act: (text: string) => void = () => {}) => {
  const inputs: Array<string> = []
  const layer = Layer.merge(
    Layer.succeed(AgentExecutor, AgentExecutor.of({
      allocate: () => Effect.sync(() => ExecutorId.make(`inproc:${randomUUID()}`)),
      execute: (input) =>
        Effect.gen(function* () {
          const texts = input.messages.map((m) => m.text)
          inputs.push(...texts)
          for (const t of texts) act(t)
          yield* input.reply(`saw: ${texts.join(" | ")}`)
        }),
      adopt: () => new TurnFailed({ code: "not_adoptable", reason: "in-process", retryable: true })
    })),
    Layer.succeed(ExecutorLiveness, ExecutorLiveness.of({ isAlive: () => Effect.succeed(false) }))
  )
  return { layer, inputs }
}
