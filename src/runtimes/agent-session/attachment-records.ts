import { Effect, Option, SynchronizedRef } from "effect"
import { Attachment } from "../../domain/attachment.js"
import { AttachmentId } from "../../domain/ids.js"
import type { AttachmentStore, Attached } from "./AttachmentStore.js"

/** The whole lineage, as the memory and directory stores hold it. */
export interface Records {
  readonly records: ReadonlyArray<Attachment>
}

const nextId = (s: Records) => AttachmentId.make(s.records.reduce((max, r) => Math.max(max, r.id), 0) + 1)

const replace = (s: Records, updated: ReadonlyArray<Attachment>): Records => {
  const byId = new Map(updated.map((r) => [r.id, r] as const))
  return { records: s.records.map((r) => byId.get(r.id) ?? r) }
}

const currentOf = (s: Records, conversationId: string) => s.records.find((r) => r.conversationId === conversationId && r.state === "current")

/**
 * A store over an in-memory copy of every record; `persist` runs with the next state before it is
 * adopted, so a failed write leaves the old state in place (and is a defect).
 */
export const makeStateStore = (initial: Records, persist: (next: Records) => Effect.Effect<void>) =>
  Effect.gen(function* () {
    const ref = yield* SynchronizedRef.make(initial)
    const mutate = <A>(f: (s: Records) => readonly [A, Records | null]) =>
      SynchronizedRef.modifyEffect(ref, (s) => {
        const [result, next] = f(s)
        return next === null ? Effect.succeed([result, s] as const) : Effect.as(persist(next), [result, next] as const)
      })
    const read = <A>(f: (s: Records) => A) => Effect.map(SynchronizedRef.get(ref), f)

    const service: AttachmentStore.Service = {
      attach: (input) =>
        mutate((s) => {
          const previous = currentOf(s, input.conversationId)
          const attachment = Attachment.make({
            id: nextId(s),
            conversationId: input.conversationId,
            runtimeId: input.runtimeId,
            provider: input.provider,
            sessionId: input.sessionId,
            providerSessionId: input.providerSessionId ?? null,
            host: input.host ?? null,
            remoteUrl: input.remoteUrl ?? null,
            metadata: input.metadata ?? null,
            state: "current",
            replaces: previous?.id ?? null,
            observationToken: 0,
            lastStatus: null,
            createdAt: input.now,
            updatedAt: input.now
          })
          const superseded = previous === undefined ? undefined : Attachment.make({ ...previous, state: "superseded", updatedAt: input.now })
          const base = superseded === undefined ? s : replace(s, [superseded])
          const result: Attached = { attachment, superseded: Option.fromNullable(superseded) }
          return [result, { records: [...base.records, attachment] }] as const
        }),
      detach: (conversationId, now) =>
        mutate((s) => {
          const previous = currentOf(s, conversationId)
          if (previous === undefined) return [Option.none<Attachment>(), null] as const
          const detached = Attachment.make({ ...previous, state: "detached", updatedAt: now })
          return [Option.some(detached), replace(s, [detached])] as const
        }),
      current: (conversationId) => read((s) => Option.fromNullable(currentOf(s, conversationId))),
      history: (conversationId) => read((s) => s.records.filter((r) => r.conversationId === conversationId)),
      currents: read((s) => s.records.filter((r) => r.state === "current")),
      applyStatus: (id, token, status, now) =>
        mutate((s) => {
          const record = s.records.find((r) => r.id === id)
          if (record === undefined || record.state !== "current" || record.observationToken >= token) return [false, null] as const
          return [true, replace(s, [Attachment.make({ ...record, observationToken: token, lastStatus: status, updatedAt: now })])] as const
        }),
      maxObservationToken: read((s) => s.records.reduce((max, r) => Math.max(max, r.observationToken), 0))
    }
    return service
  })
