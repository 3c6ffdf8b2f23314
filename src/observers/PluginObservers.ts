/**
 * The `observer` contributions of plugins, attached to the bus: each is called once per event, in
 * order, with a copy of the event (an observer cannot change what the others see). A call that
 * throws or rejects counts as a failed event; one that never settles leaves the observer's queue
 * to fill and drop. Neither reaches the pipeline.
 */
import { Effect, Layer, Schema } from "effect"
import { PluginRegistry } from "../plugins/PluginRegistry.js"
import { Observers } from "./Observers.js"

/** A plugin's observer threw or rejected on an event (counted as failed in `pynchy status`). */
export class ObserverFailed extends Schema.TaggedError<ObserverFailed>()("ObserverFailed", { observer: Schema.String, cause: Schema.Defect }) {}

export const PluginObservers = {
  layer: Layer.scopedDiscard(
    Effect.gen(function* () {
      const registry = yield* PluginRegistry
      const observers = yield* Observers
      for (const { name, plugin, value } of registry.observers) {
        yield* observers.attach({
          name: `${plugin}/${name}`,
          maxBatch: 1,
          handle: (events) =>
            Effect.forEach(events, (event) =>
              Effect.tryPromise({
                try: () => Promise.resolve(value.onEvent(structuredClone(event))),
                catch: (cause) => new ObserverFailed({ observer: `${plugin}/${name}`, cause })
              }), { discard: true }).pipe(Effect.interruptible)
        })
      }
    })
  )
}
