import { Context, Effect, FiberSet, Layer, PubSub, type Scope, Stream } from "effect"
import { type AnyChannel, asNativeChannel, type NativeChannel, type ProgressTarget } from "../contracts/channel.js"
import { noProgress, openFeed, type ProgressFeed, showsProgress } from "./progress.js"

export declare namespace Channels {
  /**
   * Outbound channels by connection name. Bindings come from channel plugins (for the host's
   * lifetime) and from connection runtimes (ephemeral: removed when the runtime closes).
   */
  export interface Service {
    readonly get: (connection: string) => NativeChannel | undefined
    /**
     * Binds a channel (a plugin's Promise channel is made native here, the one place that adapts
     * it); returns the effect that unbinds it (only if still this binding).
     */
    readonly bind: (channel: AnyChannel) => Effect.Effect<Effect.Effect<void>>
    /** Connection names as they get a channel bound: the outbox resumes their pending deliveries. */
    readonly bound: Stream.Stream<string>
    readonly names: () => ReadonlyArray<string>
    /**
     * Opens a turn's progress feed on the channel of its connection (`started` now, `ended` when
     * the scope closes); a no-op when that channel shows no progress. Never waits on the channel.
     */
    readonly progress: (target: ProgressTarget) => Effect.Effect<ProgressFeed, never, Scope.Scope>
  }
}

export class Channels extends Context.Tag("pynchy/Channels")<Channels, Channels.Service>() {
  static readonly make = Effect.gen(function* () {
    const byName = new Map<string, NativeChannel>()
    const hub = yield* PubSub.unbounded<string>()
    // Progress senders outlive their turn (to send `ended`); the host's scope bounds them.
    const senders = yield* FiberSet.make()
    return Channels.of({
      get: (name) => byName.get(name),
      bind: (bound) => {
        const channel = asNativeChannel(bound)
        const unbind = Effect.sync(() => {
          if (byName.get(channel.name) === channel) byName.delete(channel.name)
        })
        return Effect.sync(() => byName.set(channel.name, channel)).pipe(
          Effect.zipRight(PubSub.publish(hub, channel.name)),
          Effect.as(unbind)
        )
      },
      bound: Stream.fromPubSub(hub),
      names: () => [...byName.keys()],
      progress: (target) =>
        Effect.suspend(() => {
          const channel = byName.get(target.connection)
          return showsProgress(channel) ? openFeed(channel, target, (pump) => FiberSet.run(senders, pump)) : Effect.succeed(noProgress)
        })
    })
  })

  static readonly layer = Layer.scoped(Channels, Channels.make)
}
