/**
 * Keeps the running gateway's keys equal to the store's: loaded when the host starts, reloaded
 * when `pynchy keys create` or `revoke` wakes the host through its control socket, so a new key
 * works and a revoked one is refused without a restart.
 */
import { Context, Effect, Layer } from "effect"
import { Gateway } from "./Gateway.js"
import { GatewayKeyStore } from "./keys.js"

export declare namespace GatewayKeys {
  export interface Service {
    /** Reads the store and hands every key to the gateway. */
    readonly reload: Effect.Effect<void>
  }
}

export class GatewayKeys extends Context.Tag("pynchy/GatewayKeys")<GatewayKeys, GatewayKeys.Service>() {
  static readonly make = Effect.gen(function* () {
    const gateway = yield* Gateway
    const store = yield* GatewayKeyStore
    const reload = Effect.flatMap(store.list, gateway.setKeys).pipe(Effect.withSpan("GatewayKeys.reload"))
    yield* reload
    return GatewayKeys.of({ reload })
  })

  /** Needs the host database (the key store) and the gateway. */
  static readonly layer = Layer.effect(GatewayKeys, GatewayKeys.make).pipe(Layer.provideMerge(GatewayKeyStore.layer))
}
