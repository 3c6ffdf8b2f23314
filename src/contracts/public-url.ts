/**
 * The host's public base URL for what it hands out (the HTTP API's audio URLs, the Control UI's
 * link): a setting `publicUrl` is either an `http(s)://` address, or `tunnel`: the URL of the
 * first present tunnel (src/tunnels/detect.ts; its layer from the plugins' tunnels is in src/tunnels/tunnel-url.ts), detected once, on first use. No tunnel present:
 * the local address, with a warning.
 */
import { Context, Effect, Layer, Option } from "effect"

export declare namespace PublicUrl {
  export interface Service {
    /** The first present tunnel's URL (detected once), if any. */
    readonly tunnel: Effect.Effect<Option.Option<string>>
  }
}

export class PublicUrl extends Context.Tag("pynchy/PublicUrl")<PublicUrl, PublicUrl.Service>() {
  /** No tunnel (tests and hosts without plugins). */
  static readonly layerNone = Layer.succeed(PublicUrl, PublicUrl.of({ tunnel: Effect.succeedNone }))
}

/**
 * The base URL for a `publicUrl` setting (`at` names it in the warning): the setting's address, the
 * tunnel's, or `local` (no setting, or no tunnel present). Never with a trailing slash.
 */
export const resolvePublicUrl = (setting: string | undefined, local: string, at: string): Effect.Effect<string, never, PublicUrl> =>
  Effect.gen(function* () {
    if (setting === undefined) return local.replace(/\/+$/, "")
    if (setting !== "tunnel") return setting.replace(/\/+$/, "")
    const tunnel = yield* Effect.flatMap(PublicUrl, (p) => p.tunnel)
    if (Option.isSome(tunnel)) return tunnel.value.replace(/\/+$/, "")
    yield* Effect.logWarning(`${at}: tunnel: no tunnel is present; using the local address`).pipe(Effect.annotateLogs({ local }))
    return local.replace(/\/+$/, "")
  })
