/** The public base URL of what the host hands out (`publicUrl` of the HTTP API and the Control UI). */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Layer, Option } from "effect"
import { decodeConfig, HostConfig } from "../../src/config/HostConfig.js"
import { PluginRegistry } from "../../src/plugins/PluginRegistry.js"
import { PublicUrl, resolvePublicUrl } from "../../src/contracts/public-url.js"
import { publicUrlFromTunnels } from "../../src/tunnels/tunnel-url.js"
import { definePlugin } from "../../src/contracts/plugin.js"
import * as os from "node:os"

const withTunnels = (tunnels: ReadonlyArray<{ name: string; detect: () => unknown }>) => {
  let detections = 0
  const plugin = definePlugin({ name: "t", tunnel: () => tunnels.map((t) => ({ ...t, detect: () => (detections++, t.detect()) })) })
  const layer = publicUrlFromTunnels.pipe(
    Layer.provide(PluginRegistry.layerWith({ root: os.tmpdir(), builtins: [{ name: "t", load: () => Promise.resolve(plugin) }] })),
    Layer.provide(HostConfig.layerFrom(Either.getOrThrow(decodeConfig({}, "test config"))))
  )
  return { layer, detections: () => detections }
}

describe("public URL", () => {
  it.effect("publicUrl: tunnel is the first present tunnel's URL, detected once; an address is itself; unset is the local address", () =>
    Effect.gen(function* () {
      const t = withTunnels([
        { name: "absent", detect: () => ({ present: false, detail: "not here" }) },
        { name: "here", detect: async () => ({ present: true, url: "https://host.example.ts.net/", detail: "up" }) }
      ])
      const [a, b, c, d] = yield* Effect.all([
        resolvePublicUrl("tunnel", "http://127.0.0.1:8080/", "ui.publicUrl"),
        resolvePublicUrl("tunnel", "http://127.0.0.1:8080/", "ui.publicUrl"),
        resolvePublicUrl("https://chat.example.org/", "http://127.0.0.1:8080/", "ui.publicUrl"),
        resolvePublicUrl(undefined, "http://127.0.0.1:8080/", "ui.publicUrl")
      ]).pipe(Effect.provide(t.layer))
      assert.deepStrictEqual([a, b, c, d], ["https://host.example.ts.net", "https://host.example.ts.net", "https://chat.example.org", "http://127.0.0.1:8080"])
      // The first detection is the one asked later: each detector ran once.
      assert.strictEqual(t.detections(), 2)
    }))

  it.effect("with no tunnel present, tunnel falls back to the local address", () =>
    Effect.gen(function* () {
      const t = withTunnels([{ name: "absent", detect: () => ({ present: false, detail: "not here" }) }])
      const url = yield* resolvePublicUrl("tunnel", "http://127.0.0.1:8080/", "ui.publicUrl").pipe(Effect.provide(t.layer))
      assert.strictEqual(url, "http://127.0.0.1:8080")
      const none = yield* Effect.flatMap(PublicUrl, (p) => p.tunnel).pipe(Effect.provide(PublicUrl.layerNone))
      assert.isTrue(Option.isNone(none))
    }))
})
