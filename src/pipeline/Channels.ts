import { Context, Effect, Layer, PubSub, Stream } from "effect"
import type { Channel } from "./channel-contract.js"

export declare namespace Channels {
  /**
   * Outbound channels by connection name. Bindings come from channel plugins (for the host's
   * lifetime) and from connection runtimes (ephemeral: removed when the runtime closes).
   */
  export interface Service {
    readonly get: (connection: string) => Channel | undefined
    /** Binds a channel; returns the effect that unbinds it (only if still this binding). */
    readonly bind: (channel: Channel) => Effect.Effect<Effect.Effect<void>>
    /** Connection names as they get a channel bound: the outbox resumes their pending deliveries. */
    readonly bound: Stream.Stream<string>
    readonly names: () => ReadonlyArray<string>
  }
}

export class Channels extends Context.Tag("pynchy/Channels")<Channels, Channels.Service>() {
  static readonly make = Effect.gen(function* () {
    const byName = new Map<string, Channel>()
    const hub = yield* PubSub.unbounded<string>()
    return Channels.of({
      get: (name) => byName.get(name),
      bind: (channel) => {
        const unbind = Effect.sync(() => {
          if (byName.get(channel.name) === channel) byName.delete(channel.name)
        })
        return Effect.sync(() => byName.set(channel.name, channel)).pipe(
          Effect.zipRight(PubSub.publish(hub, channel.name)),
          Effect.as(unbind)
        )
      },
      bound: Stream.fromPubSub(hub),
      names: () => [...byName.keys()]
    })
  })

  static readonly layer = Layer.effect(Channels, Channels.make)
}
