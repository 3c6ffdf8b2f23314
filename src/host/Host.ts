import { Clock, Context, Effect, Layer, Schedule } from "effect"
import { HostStore } from "../db/HostStore.js"
import { Observers } from "../observers/Observers.js"
import { Gateway } from "../gateway/Gateway.js"
import { HostIdentity } from "../pipeline/HostIdentity.js"
import { TurnQueue } from "../pipeline/TurnQueue.js"
import { ConnectionRuntimes } from "../runtimes/ConnectionRuntimes.js"
import { DeployRollback } from "./DeployRollback.js"
import { LiveStatus } from "./LiveStatus.js"
import { Dispatched } from "./startup-steps.js"

export declare namespace Host {
  /** The running host: what `pynchy start` holds open until a signal arrives. */
  export interface Service {
    readonly epoch: string
    readonly readyAt: number
  }
}

/** Records this run in the database: its start now, its stop when the stack has closed above it. */
export const runRecordLayer = Layer.scopedDiscard(
  Effect.gen(function* () {
    const identity = yield* HostIdentity
    const store = yield* HostStore
    yield* Effect.acquireRelease(store.recordStart(identity), () => store.recordStop(identity.epoch))
  })
)

/**
 * The last layer of a stack (step 10 done): it says `ready`, confirms a deploy in progress, and
 * publishes the state. Everything it sits on was started before it and is stopped after it.
 */
export class Host extends Context.Tag("pynchy/Host")<Host, Host.Service>() {
  static readonly layer = Layer.scoped(
    Host,
    Effect.gen(function* () {
      yield* Dispatched
      const identity = yield* HostIdentity
      const store = yield* HostStore
      const status = yield* LiveStatus
      const deploy = yield* DeployRollback
      yield* store.recordReady(identity.epoch)
      yield* deploy.confirm
      yield* status.setState("ready")
      const queue = yield* TurnQueue
      const gateway = yield* Gateway
      const runtimes = yield* ConnectionRuntimes
      const observers = yield* Observers
      // One write of status.json per second, with every section.
      const publish = Effect.gen(function* () {
        yield* status.setSections({
          runtimes: yield* runtimes.health,
          queue: yield* queue.stats,
          gateway: yield* gateway.status,
          observers: yield* observers.stats
        })
      })
      yield* publish
      yield* Effect.forkScoped(Effect.repeat(publish, Schedule.spaced("1 second")))
      yield* Effect.addFinalizer(() => status.setState("stopping"))
      const readyAt = yield* Clock.currentTimeMillis
      yield* Effect.logInfo("ready").pipe(Effect.annotateLogs({ epoch: identity.epoch, pid: identity.pid, version: identity.version }))
      return { epoch: identity.epoch, readyAt }
    })
  )
}
