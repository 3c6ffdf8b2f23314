import { Effect, Either, Layer, Option, Runtime, Schema } from "effect"
import { HostConfig } from "../config/HostConfig.js"
import { MessageStore } from "../db/MessageStore.js"
import { WorkspaceStore } from "../db/WorkspaceStore.js"
import { ConnectionName, ConversationId, WorkspaceId } from "../domain/ids.js"
import { problemsOf } from "../domain/problems.js"
import { Workspace } from "../domain/workspace.js"
import { Channels } from "../pipeline/Channels.js"
import { Ingest } from "../pipeline/Ingest.js"
import { Workspaces } from "../pipeline/Workspaces.js"
import { channelToPromise } from "../contracts/channel.js"
import type { ConnectionRuntimeContext, IngestMessageInput, WorkspaceInfo } from "../contracts/connection-runtime.js"
import { RuntimeContexts } from "./ConnectionRuntimes.js"
import { ContextCallFailed, type NativeRuntimeContext } from "../contracts/native-runtime.js"

const info = (w: Workspace): WorkspaceInfo => Schema.encodeSync(Workspace)(w) as unknown as WorkspaceInfo
const decodeWorkspace = Schema.decodeUnknownEither(Workspace)

/**
 * The host side of the runtime context: Effects over the pipeline's services for the built-ins,
 * and the same as Promise-facing callbacks for plugins, run through the layer's runtime. Typed
 * failures are ContextCallFailed with their message (a Promise rejects with it).
 */
export const layer = Layer.effect(
  RuntimeContexts,
  Effect.gen(function* () {
    const runtime = yield* Effect.runtime<Ingest | MessageStore | WorkspaceStore | Channels | Workspaces | HostConfig>()
    // Each answer is handed back after a macrotask hop: a provider loop that awaits ingest line
    // after line over a backlog would otherwise run on microtasks alone and starve every timer
    // and socket of the host (readiness checks, deadlines) until the backlog is drained.
    const call = <A, E extends { readonly message: string }>(effect: Effect.Effect<A, E, Ingest | MessageStore | WorkspaceStore | Channels | Workspaces | HostConfig>) =>
      effect.pipe(Effect.mapError((e) => new ContextCallFailed({ reason: e.message })), Effect.provide(runtime))
    const run = <A, E extends { readonly message: string }>(effect: Effect.Effect<A, E, Ingest | MessageStore | WorkspaceStore | Channels | Workspaces | HostConfig>) =>
      Runtime.runPromise(runtime)(call(effect)).then(
        (a) => new Promise<A>((resolve) => setImmediate(() => resolve(a))),
        (e: unknown) => new Promise<never>((_, reject) => setImmediate(() => reject(e)))
      )
    const ingest = (input: IngestMessageInput) => Effect.flatMap(Ingest, (i) => i.ingest(input))
    const ingestMany = (inputs: ReadonlyArray<IngestMessageInput>) =>
      Effect.flatMap(Ingest, (i) => i.ingestMany(inputs)).pipe(Effect.flatMap((outcomes) => Effect.all(outcomes)))
    const cursor = (connection: string, stream: string) =>
      Effect.flatMap(MessageStore, (s) => s.cursor(ConnectionName.make(connection), stream)).pipe(
        Effect.map(Option.match({ onNone: () => null, onSome: (c) => ({ position: c.position, order: c.order }) }))
      )
    const { config } = yield* HostConfig
    const channels = yield* Channels
    const workspaces = yield* Workspaces

    return RuntimeContexts.of({
      make: (runtimeName) =>
        Effect.sync(() => {
          const unbinds: Array<Effect.Effect<void>> = []
          const context: ConnectionRuntimeContext = {
            ingestMessage: (input) => run(ingest(input)),
            getCursor: (connection, stream) => run(cursor(connection, stream)),
            channels: {
              get: (name) => {
                const channel = channels.get(name)
                return channel === undefined ? undefined : channelToPromise(channel, Runtime.runPromise(runtime))
              },
              bind: (channel) => {
                unbinds.push(Runtime.runSync(runtime)(channels.bind(channel)))
              }
            },
            workspaces: {
              list: () => run(Effect.map(workspaces.list, (ws) => ws.map(info))),
              get: (id) => run(Effect.map(workspaces.get(WorkspaceId.make(id)), Option.match({ onNone: () => undefined, onSome: info }))),
              register: (definition) => {
                const decoded = decodeWorkspace(definition, { errors: "all" })
                if (Either.isLeft(decoded)) {
                  return Promise.reject(new Error(`invalid workspace from runtime '${runtimeName}': ${problemsOf(decoded.left).map((p) => `${p.path}: ${p.reason}`).join("; ")}`))
                }
                return run(workspaces.register(decoded.right))
              }
            },
            bindSession: (conversationId, binding) =>
              run(Effect.flatMap(WorkspaceStore, (s) => s.bindSession({ conversationId: ConversationId.make(conversationId), kind: binding.kind, ref: binding.ref }))),
            routes: (connection) => workspaces.routesOf(connection).map((r) => ({ place: r.place, workspace: r.workspace, ...(r.trigger !== undefined ? { trigger: r.trigger } : {}) })),
            connectionConfig: (name) => (config.connections as Record<string, Record<string, unknown> | undefined>)[name]
          }
          const native: NativeRuntimeContext = {
            ingest: (input) => call(ingest(input)),
            ingestMany: (inputs) => call(ingestMany(inputs)),
            cursor: (connection, stream) => call(cursor(connection, stream)),
            bindChannel: (channel) => Effect.map(channels.bind(channel), (unbind) => void unbinds.push(unbind)),
            routes: context.routes,
            promise: context
          }
          return { context: native, release: Effect.suspend(() => Effect.all(unbinds.splice(0), { discard: true })) }
        })
    })
  })
)
