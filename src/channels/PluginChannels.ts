import { Duration, Effect, Layer, Schema } from "effect"
import { HostConfig } from "../config/HostConfig.js"
import { Channels } from "../pipeline/Channels.js"
import { PluginRegistry } from "../plugins/PluginRegistry.js"

/** A channel's own start failed or did not answer by the start deadline: startup fails, naming it. */
export class ChannelStartFailed extends Schema.TaggedError<ChannelStartFailed>()("ChannelStartFailed", {
  channel: Schema.String,
  plugin: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `channel '${this.channel}' from plugin '${this.plugin}' failed to start: ${this.reason}`
  }
}

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
      const bound = Effect.acquireRelease(
        Effect.gen(function* () {
          if (channel.start) {
            yield* Effect.tryPromise(() => channel.start!()).pipe(
              Effect.timeout(deadline),
              Effect.interruptible,
              Effect.mapError((e) => new ChannelStartFailed({ channel: channel.name, plugin, reason: e.message }))
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
      yield* Effect.asVoid(bound)
    }
  })
)
