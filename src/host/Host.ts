import { Context, Effect, Layer } from "effect"
import { HostStore } from "../db/HostStore.js"
import { Recovery } from "../pipeline/Recovery.js"
import { HostIdentity } from "./HostIdentity.js"

export declare namespace Host {
  /** The running host: what `pynchy start` holds open until a signal arrives. */
  export interface Service {
    readonly epoch: string
    readonly readyAt: number
  }
}

/**
 * The last layer of a stack: it records the run, says `ready`, and on release records the stop.
 * Everything it sits on was started before it and is stopped after it.
 */
export class Host extends Context.Tag("pynchy/Host")<Host, Host.Service>() {
  static readonly layer = Layer.scoped(
    Host,
    Effect.gen(function* () {
      const identity = yield* HostIdentity
      const store = yield* HostStore
      const recovery = yield* Recovery
      yield* Effect.acquireRelease(store.recordStart(identity), () => store.recordStop(identity.epoch))
      const released = yield* recovery.releaseOrphanClaims
      yield* recovery.dispatchInterrupted(released.survivors)
      yield* store.recordReady(identity.epoch)
      const readyAt = Date.now()
      yield* Effect.logInfo("ready").pipe(Effect.annotateLogs({ epoch: identity.epoch, pid: identity.pid, version: identity.version }))
      return { epoch: identity.epoch, readyAt }
    })
  )
}
