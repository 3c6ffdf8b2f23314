import { Duration, Effect, Layer } from "effect"
import { HostConfig } from "../config/HostConfig.js"
import { Channels } from "../pipeline/Channels.js"
import { PluginRegistry } from "../plugins/PluginRegistry.js"

/**
 * Startup step 10: every channel plugins contributed is started (if it has a lifecycle) and
 * bound for the host's lifetime; on shutdown it is unbound and closed, in reverse.
 */
export const layer = Layer.scopedDiscard(
  Effect.gen(function* () {
    const registry = yield* PluginRegistry
    const channels = yield* Channels
    const { config } = yield* HostConfig
    const deadline = Duration.millis(config.limits.runtimeStartTimeoutMs)
    for (const { value: channel, plugin } of registry.channels) {
      yield* Effect.acquireRelease(
        Effect.gen(function* () {
          if (channel.start) {
            yield* Effect.tryPromise(() => channel.start!()).pipe(
              Effect.timeout(deadline),
              Effect.interruptible,
              Effect.mapError((e) => new Error(`channel '${channel.name}' from plugin '${plugin}' failed to start: ${e.message}`)),
              Effect.orDie
            )
          }
          return yield* channels.bind(channel)
        }),
        (unbind) =>
          unbind.pipe(
            Effect.zipRight(channel.close ? Effect.tryPromise(() => channel.close!()).pipe(Effect.interruptible, Effect.timeout(Duration.millis(config.limits.runtimeCloseTimeoutMs))) : Effect.void),
            Effect.catchAll((e) => Effect.logWarning(`channel '${channel.name}' failed to close: ${e.message}`))
          )
      )
    }
  })
)
