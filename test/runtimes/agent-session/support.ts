import { Effect, Layer } from "effect"
import * as path from "node:path"
import { AgentSessionStatus, type AgentSessionState } from "../../../src/domain/attachment.js"
import * as Database from "../../../src/db/Database.js"
import { AgentSessionRuntimeRegistry } from "../../../src/runtimes/agent-session/AgentSessionRuntimeRegistry.js"
import { AgentSessions } from "../../../src/runtimes/agent-session/AgentSessions.js"
import { AttachmentStore } from "../../../src/runtimes/agent-session/AttachmentStore.js"
import type { SessionRef } from "../../../src/runtimes/agent-session/runtime.js"
import { tempDir } from "../../support/db.js"

/**
 * Every AttachmentStore implementation. `location()` picks fresh storage; each `open()` on it is
 * one "process": durable kinds read back what an earlier open wrote.
 */
export interface StoreKind {
  readonly name: string
  readonly durable: boolean
  readonly location: () => { readonly open: () => Layer.Layer<AttachmentStore, unknown> }
}

export const storeKinds: ReadonlyArray<StoreKind> = [
  {
    name: "database (sqlite file)",
    durable: true,
    location: () => {
      const file = path.join(tempDir("pynchy-att-"), "pynchy.db")
      return { open: () => AttachmentStore.layerDatabase.pipe(Layer.provide(Database.layerFile(file))) }
    }
  },
  {
    name: "directory",
    durable: true,
    location: () => {
      const dir = tempDir("pynchy-att-")
      return { open: () => AttachmentStore.layerDirectory({ dir, agentId: "main" }) }
    }
  },
  {
    name: "database (sqlite memory)",
    durable: false,
    location: () => ({ open: () => AttachmentStore.layerDatabase.pipe(Layer.provide(Database.layerMemory)) })
  },
  { name: "memory", durable: false, location: () => ({ open: () => AttachmentStore.layerMemory }) }
]

/** AgentSessions over one store layer and a fresh registry (register runtimes in the test). */
export const sessionsOn = <E>(store: Layer.Layer<AttachmentStore, E>) =>
  AgentSessions.layer.pipe(Layer.provideMerge(Layer.merge(store, AgentSessionRuntimeRegistry.layer)))

/** A status as the registry would make it, for store and CAS tests. */
export const statusOf = (state: AgentSessionState, extra: Partial<ConstructorParameters<typeof AgentSessionStatus>[0]> = {}) =>
  AgentSessionStatus.make({ runtime: "rt", sessionId: "s1", state, reconciledAt: 1, ...extra })

/** An in-process runtime in ClawConnect's style: sessions report what the test sets; unknown ids answer null. */
export const fakeRuntime = (id = "fake", provider = "test") => {
  const states = new Map<string, AgentSessionState>()
  const definition = {
    id,
    provider,
    inspect: (ref: SessionRef) => (states.has(ref.sessionId) ? { state: states.get(ref.sessionId) } : null),
    continue: (ref: SessionRef, request: { prompt?: string }) =>
      states.has(ref.sessionId) ? { state: "idle", finalResponse: `reply to ${request.prompt}` } : null,
    detach: () => ({ state: "dead", termination: { reason: "cancelled" } })
  }
  const register = Effect.flatMap(AgentSessionRuntimeRegistry, (r) => r.register(definition))
  return { states, definition, register }
}
