/** The host's public base URL (src/contracts/public-url.ts), from the first present tunnel among the plugins' (src/tunnels/detect.ts). */
import { Effect, Layer, Option } from "effect"
import { PublicUrl } from "../contracts/public-url.js"
import { PluginRegistry } from "../plugins/PluginRegistry.js"
import { detectTunnels, publicUrl } from "./detect.js"

/** PublicUrl from the tunnels of the plugin registry. */
export const publicUrlFromTunnels = Layer.effect(
  PublicUrl,
  Effect.gen(function* () {
    const registry = yield* PluginRegistry
    const tunnel = yield* Effect.cached(Effect.map(detectTunnels(registry.tunnels), (reports) => Option.fromNullable(publicUrl(reports)?.url)))
    return PublicUrl.of({ tunnel })
  })
)
