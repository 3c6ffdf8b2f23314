import { Clock, Effect, Layer } from "effect"

/**
 * Wraps a layer so that its start and stop are logged. Because the stop log is a finalizer added
 * after the layer's own acquisitions, "stopping X" appears before X's resources are released.
 */
export const logged = <A, E, R>(name: string, layer: Layer.Layer<A, E, R>): Layer.Layer<A, E, R> =>
  Layer.scopedContext(
    Effect.gen(function* () {
      const started = yield* Clock.currentTimeMillis
      yield* Effect.logDebug(`starting ${name}`)
      const context = yield* Layer.build(layer)
      yield* Effect.addFinalizer(() => Effect.logInfo(`stopping ${name}`))
      const ms = (yield* Clock.currentTimeMillis) - started
      yield* Effect.logInfo(`started ${name}`).pipe(Effect.annotateLogs("ms", ms))
      return context
    })
  )
